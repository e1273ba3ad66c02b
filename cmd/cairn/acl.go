package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cairndns/cairn/api"
	"github.com/cairndns/cairn/consensus"
	"github.com/urfave/cli/v2"
)

// This file holds "cairn acl": bootstrap, and the policies and tokens of
// /v1/acl, printed as Consul's CLI prints them. A secret is printed only
// where the agent answers with it (bootstrap, token create, token read
// -self), never in an error.

func aclCommand() *cli.Command {
	return &cli.Command{
		Name:         "acl",
		Usage:        "Bootstrap ACLs and manage ACL policies and tokens",
		UsageText:    "cairn acl <bootstrap|policy|token|set-agent-token> [options]",
		OnUsageError: onUsageError("cairn acl"),
		Action:       groupAction("cairn acl"),
		Subcommands: []*cli.Command{
			{
				Name:      "bootstrap",
				Usage:     "Create the first management token and print it, secret included",
				UsageText: "cairn acl bootstrap [-format table|json] [FILE]",
				Description: "Works once per cluster (acl.tokens.initial_management counts as the bootstrap);\n" +
					"afterwards the agent refuses it with the reset index: written into the file\n" +
					"acl-bootstrap-reset in the leader's data dir, it allows one more. FILE, when given,\n" +
					"holds the secret (a UUID) the token is to have, so that it never appears\n" +
					"in the process list; without it the servers choose one. Keep the printed\n" +
					"SecretID: it is not shown again.",
				ArgsUsage:    "[FILE]",
				OnUsageError: onUsageError("cairn acl bootstrap"),
				Flags:        agentFlags(formatFlag()),
				Action:       aclBootstrap,
			},
			aclPolicyCommand(),
			aclTokenCommand(),
			aclSetAgentTokenCommand(), // acl_agent_token.go
		},
	}
}

func aclBootstrap(c *cli.Context) error {
	const path = "cairn acl bootstrap"
	format, err := outputFormat(c, path)
	if err != nil {
		return err
	}
	file, err := fileArg(c, path)
	if err != nil {
		return err
	}
	secret := ""
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("bootstrap secret: %w", err)
		}
		secret = strings.TrimSpace(string(data))
		if !isUUID(secret) {
			// The file's content is a secret: not quoted.
			return fmt.Errorf("bootstrap secret: %s must hold a UUID (as uuidgen prints) and nothing else", file)
		}
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	tok, err := client.ACL().Bootstrap(c.Context, secret)
	if err != nil {
		if strings.Contains(err.Error(), "(reset index: ") {
			// Consul's reset procedure, which the refusal alone does not tell.
			return fmt.Errorf("bootstrap ACLs: %w (to bootstrap again, write that index into %s in the leader's data dir)", err, consensus.BootstrapResetFile)
		}
		return fmt.Errorf("bootstrap ACLs: %w", err)
	}
	return writeToken(c.App.Writer, format, tok)
}

func aclPolicyCommand() *cli.Command {
	idFlag := func(usage string) cli.Flag { return &cli.StringFlag{Name: "id", Usage: usage} }
	nameFlag := func(usage string) cli.Flag { return &cli.StringFlag{Name: "name", Usage: usage} }
	descFlag := func() cli.Flag { return &cli.StringFlag{Name: "description", Usage: "`TEXT` describing the policy"} }
	rulesFlag := func() cli.Flag {
		return &cli.StringFlag{Name: "rules", Usage: "the policy's `RULES` in HCL, or @FILE to read them from FILE"}
	}
	return &cli.Command{
		Name:         "policy",
		Usage:        "Create, list, read, update and delete ACL policies",
		UsageText:    "cairn acl policy <create|list|read|update|delete> [options]",
		OnUsageError: onUsageError("cairn acl policy"),
		Action:       groupAction("cairn acl policy"),
		Subcommands: []*cli.Command{
			{
				Name:      "create",
				Usage:     "Create a policy",
				UsageText: "cairn acl policy create -name NAME [-description TEXT] -rules RULES|@FILE [-format table|json]",
				Description: "Rules are Consul's, e.g. -rules 'service \"web\" { policy = \"write\" }';\n" +
					"the servers refuse rules that do not parse.",
				OnUsageError: onUsageError("cairn acl policy create"),
				Flags:        agentFlags(nameFlag("`NAME` of the policy (required)"), descFlag(), rulesFlag(), formatFlag()),
				Action:       aclPolicyCreate,
			},
			{
				Name:         "list",
				Usage:        "List the policies, without their rules",
				UsageText:    "cairn acl policy list [-format table|json]",
				OnUsageError: onUsageError("cairn acl policy list"),
				Flags:        agentFlags(formatFlag()),
				Action:       aclPolicyList,
			},
			{
				Name:         "read",
				Usage:        "Print a policy, rules included",
				UsageText:    "cairn acl policy read -id ID|-name NAME [-format table|json]",
				OnUsageError: onUsageError("cairn acl policy read"),
				Flags:        agentFlags(idFlag("`ID` of the policy"), nameFlag("`NAME` of the policy"), formatFlag()),
				Action:       aclPolicyRead,
			},
			{
				Name:         "update",
				Usage:        "Change a policy's name, description or rules",
				UsageText:    "cairn acl policy update -id ID [-name NAME] [-description TEXT] [-rules RULES|@FILE] [-format table|json]",
				Description:  "What is not given is kept.",
				OnUsageError: onUsageError("cairn acl policy update"),
				Flags: agentFlags(idFlag("`ID` of the policy (required)"), nameFlag("new `NAME` of the policy"),
					descFlag(), rulesFlag(), formatFlag()),
				Action: aclPolicyUpdate,
			},
			{
				Name:         "delete",
				Usage:        "Delete a policy",
				UsageText:    "cairn acl policy delete -id ID|-name NAME",
				Description:  "Tokens that hold the policy keep the link, which then grants nothing.",
				OnUsageError: onUsageError("cairn acl policy delete"),
				Flags:        agentFlags(idFlag("`ID` of the policy"), nameFlag("`NAME` of the policy")),
				Action:       aclPolicyDelete,
			},
		},
	}
}

func aclPolicyCreate(c *cli.Context) error {
	const path = "cairn acl policy create"
	format, err := checkACLArgs(c, path)
	if err != nil {
		return err
	}
	if strings.TrimSpace(c.String("name")) == "" {
		return usagef("missing -name: give the policy a name (see \"%s -h\")", path)
	}
	if !c.IsSet("rules") {
		return usagef("missing -rules: give the rules in HCL, or @FILE (see \"%s -h\")", path)
	}
	rules, err := readRules(c.String("rules"))
	if err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	p, err := client.ACL().PolicyCreate(c.Context, &api.ACLPolicy{
		Name: c.String("name"), Description: c.String("description"), Rules: rules,
	})
	if err != nil {
		return fmt.Errorf("create policy %q: %w", c.String("name"), err)
	}
	return writePolicy(c.App.Writer, format, p)
}

func aclPolicyList(c *cli.Context) error {
	format, err := checkACLArgs(c, "cairn acl policy list")
	if err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	list, err := client.ACL().PolicyList(c.Context)
	if err != nil {
		return fmt.Errorf("list policies: %w", err)
	}
	if format == formatJSON {
		if list == nil {
			list = []*api.ACLPolicyListEntry{}
		}
		return writeJSON(c.App.Writer, list)
	}
	var b strings.Builder
	for i, p := range list {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s:\n   ID:           %s\n   Description:  %s\n", p.Name, p.ID, p.Description)
	}
	_, err = io.WriteString(c.App.Writer, b.String())
	return err
}

func aclPolicyRead(c *cli.Context) error {
	const path = "cairn acl policy read"
	format, err := checkACLArgs(c, path)
	if err != nil {
		return err
	}
	if err := oneOf(c, path, "id", "name"); err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	p, err := readPolicy(c, client)
	if err != nil {
		return err
	}
	return writePolicy(c.App.Writer, format, p)
}

// readPolicy reads the policy -id or -name names.
func readPolicy(c *cli.Context, client *api.Client) (*api.ACLPolicy, error) {
	if id := c.String("id"); c.IsSet("id") {
		p, err := client.ACL().PolicyRead(c.Context, id)
		if err != nil {
			return nil, fmt.Errorf("read policy %q: %w", id, err)
		}
		return p, nil
	}
	name := c.String("name")
	p, err := client.ACL().PolicyReadByName(c.Context, name)
	if err != nil {
		return nil, fmt.Errorf("read policy named %q: %w", name, err)
	}
	return p, nil
}

func aclPolicyUpdate(c *cli.Context) error {
	const path = "cairn acl policy update"
	format, err := checkACLArgs(c, path)
	if err != nil {
		return err
	}
	id := c.String("id")
	if strings.TrimSpace(id) == "" {
		return usagef("missing -id: give the ID of the policy to update (see \"%s -h\")", path)
	}
	if !c.IsSet("name") && !c.IsSet("description") && !c.IsSet("rules") {
		return usagef("nothing to update: give -name, -description or -rules (see \"%s -h\")", path)
	}
	if c.IsSet("name") && strings.TrimSpace(c.String("name")) == "" {
		return usagef("-name is empty (see \"%s -h\")", path)
	}
	var rules string
	if c.IsSet("rules") {
		if rules, err = readRules(c.String("rules")); err != nil {
			return err
		}
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	// The agent replaces a policy whole: what is not given is read first.
	p, err := client.ACL().PolicyRead(c.Context, id)
	if err != nil {
		return fmt.Errorf("update policy %q: %w", id, err)
	}
	if c.IsSet("name") {
		p.Name = c.String("name")
	}
	if c.IsSet("description") {
		p.Description = c.String("description")
	}
	if c.IsSet("rules") {
		p.Rules = rules
	}
	if p, err = client.ACL().PolicyUpdate(c.Context, p); err != nil {
		return fmt.Errorf("update policy %q: %w", id, err)
	}
	return writePolicy(c.App.Writer, format, p)
}

func aclPolicyDelete(c *cli.Context) error {
	const path = "cairn acl policy delete"
	if c.NArg() > 0 {
		return usagef("unexpected argument %q (see \"%s -h\")", c.Args().First(), path)
	}
	if err := oneOf(c, path, "id", "name"); err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	id := c.String("id")
	if !c.IsSet("id") {
		p, err := readPolicy(c, client)
		if err != nil {
			return err
		}
		id = p.ID
	}
	if err := client.ACL().PolicyDelete(c.Context, id); err != nil {
		return fmt.Errorf("delete policy %q: %w", id, err)
	}
	_, err = fmt.Fprintf(c.App.Writer, "Policy %q deleted successfully\n", id)
	return err
}

func aclTokenCommand() *cli.Command {
	policyFlags := func() []cli.Flag {
		return []cli.Flag{
			&cli.StringSliceFlag{Name: "policy-name", Usage: "`NAME` of a policy the token holds; repeat for several"},
			&cli.StringSliceFlag{Name: "policy-id", Usage: "`ID` of a policy the token holds; repeat for several"},
		}
	}
	descFlag := func() cli.Flag { return &cli.StringFlag{Name: "description", Usage: "`TEXT` describing the token"} }
	return &cli.Command{
		Name:         "token",
		Usage:        "Create, list, read, update and delete ACL tokens",
		UsageText:    "cairn acl token <create|list|read|update|delete> [options]",
		OnUsageError: onUsageError("cairn acl token"),
		Action:       groupAction("cairn acl token"),
		Subcommands: []*cli.Command{
			{
				Name:  "create",
				Usage: "Create a token and print it, secret included",
				UsageText: "cairn acl token create [-description TEXT] [-policy-name NAME]... [-policy-id ID]...\n" +
					"    [-secret UUID] [-accessor UUID] [-local] [-expires-ttl DURATION] [-format table|json]",
				Description: "The token grants the rules of its policies. The servers choose the\n" +
					"accessor and the secret unless given. Keep the printed SecretID: it is\n" +
					"not shown again.",
				OnUsageError: onUsageError("cairn acl token create"),
				Flags: agentFlags(append(policyFlags(), descFlag(),
					&cli.StringFlag{Name: "secret", Usage: "the token's secret, a `UUID`", DefaultText: "chosen by the servers"},
					&cli.StringFlag{Name: "accessor", Usage: "the token's accessor ID, a `UUID`", DefaultText: "chosen by the servers"},
					&cli.BoolFlag{Name: "local", Usage: "keep the token in this datacenter"},
					&cli.DurationFlag{Name: "expires-ttl", Usage: "make the token stop working after `DURATION`", DefaultText: "never"},
					formatFlag())...),
				Action: aclTokenCreate,
			},
			{
				Name:         "list",
				Usage:        "List the tokens, without their secrets",
				UsageText:    "cairn acl token list [-format table|json]",
				OnUsageError: onUsageError("cairn acl token list"),
				Flags:        agentFlags(formatFlag()),
				Action:       aclTokenList,
			},
			{
				Name:  "read",
				Usage: "Print a token",
				UsageText: "cairn acl token read -id ACCESSOR [-format table|json]\n" +
					"cairn acl token read -self [-format table|json]",
				Description: "A token read by -id is shown without its secret; -self reads the token\n" +
					"the request is made with (-token), secret included.",
				OnUsageError: onUsageError("cairn acl token read"),
				Flags: agentFlags(
					&cli.StringFlag{Name: "id", Usage: "`ACCESSOR` ID of the token"},
					&cli.BoolFlag{Name: "self", Usage: "read the token of -token itself"},
					formatFlag()),
				Action: aclTokenRead,
			},
			{
				Name:  "update",
				Usage: "Change a token's description or policies",
				UsageText: "cairn acl token update -id ACCESSOR [-description TEXT] [-policy-name NAME]... [-policy-id ID]...\n" +
					"    [-format table|json]",
				Description: "What is not given is kept. The -policy flags replace the token's policies\n" +
					"with the ones given. The secret never changes.",
				OnUsageError: onUsageError("cairn acl token update"),
				Flags: agentFlags(append(policyFlags(), descFlag(),
					&cli.StringFlag{Name: "id", Usage: "`ACCESSOR` ID of the token (required)"},
					formatFlag())...),
				Action: aclTokenUpdate,
			},
			{
				Name:         "delete",
				Usage:        "Delete a token",
				UsageText:    "cairn acl token delete -id ACCESSOR",
				OnUsageError: onUsageError("cairn acl token delete"),
				Flags:        agentFlags(&cli.StringFlag{Name: "id", Usage: "`ACCESSOR` ID of the token (required)"}),
				Action:       aclTokenDelete,
			},
		},
	}
}

func aclTokenCreate(c *cli.Context) error {
	const path = "cairn acl token create"
	format, err := checkACLArgs(c, path)
	if err != nil {
		return err
	}
	// The secret is never quoted back: it may be right but for a typo.
	if c.IsSet("secret") && !isUUID(c.String("secret")) {
		return usagef("-secret: must be a UUID (as uuidgen prints) (see \"%s -h\")", path)
	}
	if a := c.String("accessor"); c.IsSet("accessor") && !isUUID(a) {
		return usagef("-accessor %q: must be a UUID (as uuidgen prints) (see \"%s -h\")", a, path)
	}
	links, err := policyLinks(c, path)
	if err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	tok, err := client.ACL().TokenCreate(c.Context, &api.ACLToken{
		AccessorID: c.String("accessor"), SecretID: c.String("secret"),
		Description: c.String("description"), Policies: links, Local: c.Bool("local"),
		ExpirationTTL: c.Duration("expires-ttl"),
	})
	if err != nil {
		return fmt.Errorf("create token: %w", err)
	}
	return writeToken(c.App.Writer, format, tok)
}

// policyLinks returns the policies -policy-name and -policy-id give.
func policyLinks(c *cli.Context, path string) ([]api.ACLLink, error) {
	var links []api.ACLLink
	for _, f := range []string{"policy-name", "policy-id"} {
		for _, v := range c.StringSlice(f) {
			if strings.TrimSpace(v) == "" {
				return nil, usagef("-%s is empty (see \"%s -h\")", f, path)
			}
			if f == "policy-name" {
				links = append(links, api.ACLLink{Name: v})
			} else {
				links = append(links, api.ACLLink{ID: v})
			}
		}
	}
	return links, nil
}

func aclTokenList(c *cli.Context) error {
	format, err := checkACLArgs(c, "cairn acl token list")
	if err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	list, err := client.ACL().TokenList(c.Context)
	if err != nil {
		return fmt.Errorf("list tokens: %w", err)
	}
	if format == formatJSON {
		if list == nil {
			list = []*api.ACLTokenListEntry{}
		}
		return writeJSON(c.App.Writer, list)
	}
	var b strings.Builder
	for i, t := range list {
		if i > 0 {
			b.WriteByte('\n')
		}
		// api.ACLTokenListEntry has no secret to print.
		formatToken(&b, &api.ACLToken{
			AccessorID: t.AccessorID, Description: t.Description, Policies: t.Policies,
			Local: t.Local, CreateTime: t.CreateTime, ExpirationTime: t.ExpirationTime,
		})
	}
	_, err = io.WriteString(c.App.Writer, b.String())
	return err
}

func aclTokenRead(c *cli.Context) error {
	const path = "cairn acl token read"
	format, err := checkACLArgs(c, path)
	if err != nil {
		return err
	}
	id := c.String("id")
	switch {
	case c.IsSet("id") && c.Bool("self"):
		return usagef("give -id or -self, not both (see \"%s -h\")", path)
	case !c.IsSet("id") && !c.Bool("self"):
		return usagef("missing -id or -self (see \"%s -h\")", path)
	case c.IsSet("id") && strings.TrimSpace(id) == "":
		return usagef("-id is empty (see \"%s -h\")", path)
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	var tok *api.ACLToken
	if c.Bool("self") {
		if tok, err = client.ACL().TokenReadSelf(c.Context); err != nil {
			return fmt.Errorf("read own token: %w", err)
		}
	} else if tok, err = client.ACL().TokenRead(c.Context, id); err != nil {
		return fmt.Errorf("read token %q: %w", id, err)
	}
	return writeToken(c.App.Writer, format, tok)
}

func aclTokenUpdate(c *cli.Context) error {
	const path = "cairn acl token update"
	format, err := checkACLArgs(c, path)
	if err != nil {
		return err
	}
	id := c.String("id")
	if strings.TrimSpace(id) == "" {
		return usagef("missing -id: give the accessor ID of the token to update (see \"%s -h\")", path)
	}
	setPolicies := c.IsSet("policy-name") || c.IsSet("policy-id")
	if !setPolicies && !c.IsSet("description") {
		return usagef("nothing to update: give -description, -policy-name or -policy-id (see \"%s -h\")", path)
	}
	links, err := policyLinks(c, path)
	if err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	// The agent replaces a token's description, policies and Local
	// together: what is not given is read first, Local included, which
	// must not flip to false by omission.
	tok, err := client.ACL().TokenRead(c.Context, id)
	if err != nil {
		return fmt.Errorf("update token %q: %w", id, err)
	}
	upd := &api.ACLToken{AccessorID: tok.AccessorID, Description: tok.Description, Local: tok.Local}
	for _, l := range tok.Policies {
		upd.Policies = append(upd.Policies, api.ACLLink{ID: l.ID})
	}
	if c.IsSet("description") {
		upd.Description = c.String("description")
	}
	if setPolicies {
		upd.Policies = links
	}
	if tok, err = client.ACL().TokenUpdate(c.Context, upd); err != nil {
		return fmt.Errorf("update token %q: %w", id, err)
	}
	return writeToken(c.App.Writer, format, tok)
}

func aclTokenDelete(c *cli.Context) error {
	const path = "cairn acl token delete"
	if c.NArg() > 0 {
		return usagef("unexpected argument %q (see \"%s -h\")", c.Args().First(), path)
	}
	id := c.String("id")
	if strings.TrimSpace(id) == "" {
		return usagef("missing -id: give the accessor ID of the token to delete (see \"%s -h\")", path)
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	if err := client.ACL().TokenDelete(c.Context, id); err != nil {
		return fmt.Errorf("delete token %q: %w", id, err)
	}
	_, err = fmt.Fprintf(c.App.Writer, "Token %q deleted successfully\n", id)
	return err
}

// writeToken prints a token as Consul's "acl token read" does, or as JSON.
// The SecretID line is there only when the agent sent the secret.
func writeToken(w io.Writer, format string, t *api.ACLToken) error {
	if format == formatJSON {
		return writeJSON(w, t)
	}
	var b strings.Builder
	formatToken(&b, t)
	_, err := io.WriteString(w, b.String())
	return err
}

func formatToken(b *strings.Builder, t *api.ACLToken) {
	fmt.Fprintf(b, "AccessorID:       %s\n", t.AccessorID)
	if t.SecretID != "" {
		fmt.Fprintf(b, "SecretID:         %s\n", t.SecretID)
	}
	fmt.Fprintf(b, "Description:      %s\n", t.Description)
	fmt.Fprintf(b, "Local:            %t\n", t.Local)
	fmt.Fprintf(b, "Create Time:      %v\n", t.CreateTime)
	if t.ExpirationTime != nil {
		fmt.Fprintf(b, "Expiration Time:  %v\n", *t.ExpirationTime)
	}
	if len(t.Policies) > 0 {
		b.WriteString("Policies:\n")
		for _, p := range t.Policies {
			fmt.Fprintf(b, "   %s - %s\n", p.ID, p.Name)
		}
	}
}

// readRules returns the value of -rules, or the content of FILE for
// @FILE.
func readRules(v string) (string, error) {
	if file, ok := strings.CutPrefix(v, "@"); ok {
		if file == "" {
			return "", usagef("-rules @: missing the FILE after @")
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("-rules: %w", err)
		}
		v = string(data)
	}
	if strings.TrimSpace(v) == "" {
		return "", usagef("-rules is empty: a policy without rules grants nothing")
	}
	return v, nil
}

// writePolicy prints a policy as Consul's "acl policy read" does, or as
// JSON.
func writePolicy(w io.Writer, format string, p *api.ACLPolicy) error {
	if format == formatJSON {
		return writeJSON(w, p)
	}
	_, err := fmt.Fprintf(w, "ID:           %s\nName:         %s\nDescription:  %s\nRules:\n%s\n",
		p.ID, p.Name, p.Description, strings.TrimRight(p.Rules, "\n"))
	return err
}

// checkACLArgs refuses arguments (every acl command but bootstrap takes
// flags only) and returns -format.
func checkACLArgs(c *cli.Context, path string) (string, error) {
	if c.NArg() > 0 {
		return "", usagef("unexpected argument %q (see \"%s -h\")", c.Args().First(), path)
	}
	return outputFormat(c, path)
}

// oneOf requires exactly one of the string flags a and b, not empty.
func oneOf(c *cli.Context, path, a, b string) error {
	switch {
	case c.IsSet(a) && c.IsSet(b):
		return usagef("give -%s or -%s, not both (see \"%s -h\")", a, b, path)
	case !c.IsSet(a) && !c.IsSet(b):
		return usagef("missing -%s or -%s (see \"%s -h\")", a, b, path)
	}
	for _, f := range []string{a, b} {
		if c.IsSet(f) && strings.TrimSpace(c.String(f)) == "" {
			return usagef("-%s is empty (see \"%s -h\")", f, path)
		}
	}
	return nil
}

// isUUID reports whether s has the 8-4-4-4-12 hex form of the IDs and
// secrets the servers accept.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'):
			return false
		}
	}
	return true
}
