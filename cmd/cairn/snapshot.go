package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/cairndns/cairn/api"
	"github.com/urfave/cli/v2"
)

func snapshotCommand() *cli.Command {
	return &cli.Command{
		Name:         "snapshot",
		Usage:        "Save the catalog to a file, restore it, or inspect a saved one",
		UsageText:    "cairn snapshot <save|restore|inspect> [options] FILE",
		OnUsageError: onUsageError("cairn snapshot"),
		Action:       groupAction("cairn snapshot"),
		Subcommands: []*cli.Command{
			{
				Name:      "save",
				Usage:     "Save a point-in-time archive of the datacenter's catalog to FILE",
				UsageText: "cairn snapshot save [-http-addr ADDRESS] FILE",
				Description: "Asks the servers' leader for an archive of the catalog (nodes, services,\n" +
					"checks), checks it, and writes it to FILE, replacing it only once the\n" +
					"whole archive is there. The archive is a gzip'ed tar of meta.json,\n" +
					"state.bin and SHA256SUMS: \"tar xzf FILE && sha256sum -c SHA256SUMS\"\n" +
					"checks it by hand.",
				ArgsUsage:    "FILE",
				OnUsageError: onUsageError("cairn snapshot save"),
				Flags:        agentFlags(),
				Action:       snapshotSave,
			},
			{
				Name:      "restore",
				Usage:     "Replace the datacenter's catalog with the archive in FILE",
				UsageText: "cairn snapshot restore [-http-addr ADDRESS] FILE",
				Description: "Checks the archive, then sends it to the servers, which check it again\n" +
					"and restore it on every server through Raft. Everything written since\n" +
					"the archive was saved is lost; the agents then register their own\n" +
					"services again. For disaster recovery.",
				ArgsUsage:    "FILE",
				OnUsageError: onUsageError("cairn snapshot restore"),
				Flags:        agentFlags(),
				Action:       snapshotRestore,
			},
			{
				Name:         "inspect",
				Usage:        "Check an archive and show what it holds",
				UsageText:    "cairn snapshot inspect [-format table|json] FILE",
				ArgsUsage:    "FILE",
				OnUsageError: onUsageError("cairn snapshot inspect"),
				Flags:        []cli.Flag{formatFlag()},
				Action:       snapshotInspect,
			},
		},
	}
}

func snapshotSave(c *cli.Context) error {
	file, err := oneArg(c, "cairn snapshot save", "FILE")
	if err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	rc, _, err := client.Snapshot().Save(c.Context)
	if err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	defer rc.Close()
	// Written beside FILE and renamed over it once checked, so a failed
	// save never leaves a truncated archive under the name.
	tmp, err := os.CreateTemp(filepath.Dir(file), filepath.Base(file)+".*.tmp")
	if err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	prog := newProgress(c.App.ErrWriter, "Saved", 0)
	_, err = io.Copy(progressWriter{tmp, prog}, rc)
	prog.done()
	if err != nil {
		tmp.Close()
		return fmt.Errorf("save snapshot: download: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("save snapshot: %w", err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		tmp.Close()
		return fmt.Errorf("save snapshot: %w", err)
	}
	meta, err := api.VerifySnapshot(tmp)
	if cerr := tmp.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("save snapshot: the agent sent a bad archive: %w", err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	_, err = fmt.Fprintf(c.App.Writer, "Saved and verified snapshot to index %d\n", meta.Index)
	return err
}

func snapshotRestore(c *cli.Context) error {
	file, err := oneArg(c, "cairn snapshot restore", "FILE")
	if err != nil {
		return err
	}
	if err := verifyFile(file); err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	defer f.Close()
	var size int64
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	prog := newProgress(c.App.ErrWriter, "Sent", size)
	err = client.Snapshot().Restore(c.Context, progressReader{f, prog})
	prog.done()
	if err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	_, err = fmt.Fprintln(c.App.Writer, "Restored snapshot")
	return err
}

// verifyFile checks the archive in file.
func verifyFile(file string) error {
	_, err := inspectFile(file)
	return err
}

func inspectFile(file string) (*api.SnapshotMeta, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	meta, err := api.VerifySnapshot(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return meta, nil
}

func snapshotInspect(c *cli.Context) error {
	file, err := oneArg(c, "cairn snapshot inspect", "FILE")
	if err != nil {
		return err
	}
	format, err := outputFormat(c, "cairn snapshot inspect")
	if err != nil {
		return err
	}
	meta, err := inspectFile(file)
	if err != nil {
		return fmt.Errorf("inspect snapshot: %w", err)
	}
	if format == formatJSON {
		return writeJSON(c.App.Writer, meta)
	}
	return writeTable(c.App.Writer, [][]string{
		{"ID", meta.ID},
		{"Size", strconv.FormatInt(meta.Size, 10)},
		{"Index", strconv.FormatUint(meta.Index, 10)},
		{"Term", strconv.FormatUint(meta.Term, 10)},
		{"Datacenter", meta.Datacenter},
		{"Created", meta.Created.UTC().Format("2006-01-02T15:04:05Z")},
		{"Nodes", strconv.Itoa(meta.Nodes)},
		{"Services", strconv.Itoa(meta.Services)},
		{"Checks", strconv.Itoa(meta.Checks)},
		{"Version", strconv.Itoa(meta.Version)},
	})
}
