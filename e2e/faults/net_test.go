package faults

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// network is one run's lab network: a hub namespace holding a bridge, one
// namespace per agent joined to the bridge by a veth pair (eth0 inside),
// and a veth from the host's namespace to the bridge, so that the test
// process reaches every agent's HTTP and DNS ports. Everything lives in
// 10.200.N.0/24, N picked at random among the blocks the host does not
// route; agents are .11, .12, … and the host is .254. Partitions are real:
// iptables rules or a link set down inside an agent's namespace.
type network struct {
	ip, iptables string // the programs' paths
	id           string // "<pid>-<hex>": in every name this run creates
	prefix       string // "10.200.N"
	hub          string // the hub namespace
	hostIf       string // the host's end of its veth
	hostIP       string
}

// netNode is one agent's namespace and address.
type netNode struct {
	ns, ip string
}

// newNetwork builds the network with one namespace per name, addresses
// first, first+1, … in the order given. A cleanup deletes it all, after
// the cleanups registered later (the agents) have run.
func newNetwork(t *testing.T, names []string, first int) (*network, map[string]netNode) {
	t.Helper()
	ip, err := lookTool("ip")
	if err != nil {
		t.Fatalf("ip is required when CAIRN_E2E=1: %v", err)
	}
	ipt, err := lookTool("iptables")
	if err != nil {
		t.Fatalf("iptables is required when CAIRN_E2E=1: %v", err)
	}
	var b [3]byte
	rand.Read(b[:])
	suffix := hex.EncodeToString(b[:])
	n := &network{ip: ip, iptables: ipt, id: strconv.Itoa(os.Getpid()) + "-" + suffix}
	n.prefix = n.pickPrefix(t)
	n.hub = nsPrefix + n.id + "-hub"
	n.hostIf = "cfh" + suffix // 9 characters; interface names take at most 15
	n.hostIP = n.prefix + ".254"

	var created []string // namespaces, deleted in reverse order
	t.Cleanup(func() {
		for i := len(created) - 1; i >= 0; i-- {
			if out, err := exec.Command(ip, "netns", "delete", created[i]).CombinedOutput(); err != nil {
				t.Errorf("ip netns delete %s: %v: %s", created[i], err, bytes.TrimSpace(out))
			}
		}
		// Gone with the hub's end of it, normally; this is for a run
		// that failed between creating the pair and moving its end.
		if exec.Command(ip, "link", "show", n.hostIf).Run() == nil {
			_ = exec.Command(ip, "link", "delete", n.hostIf).Run()
		}
	})
	addNS := func(ns string) {
		n.must(t, "netns", "add", ns)
		created = append(created, ns)
		n.must(t, "-n", ns, "link", "set", "lo", "up")
	}

	addNS(n.hub)
	n.must(t, "-n", n.hub, "link", "add", "br0", "type", "bridge")
	n.must(t, "-n", n.hub, "link", "set", "br0", "up")
	n.must(t, "link", "add", n.hostIf, "type", "veth", "peer", "name", "host", "netns", n.hub)
	n.must(t, "-n", n.hub, "link", "set", "host", "master", "br0", "up")
	n.must(t, "addr", "add", n.hostIP+"/24", "dev", n.hostIf)
	n.must(t, "link", "set", n.hostIf, "up")

	nodes := make(map[string]netNode, len(names))
	for i, name := range names {
		node := netNode{ns: nsPrefix + n.id + "-" + name, ip: fmt.Sprintf("%s.%d", n.prefix, first+i)}
		addNS(node.ns)
		hubEnd := "v" + name // in the hub namespace only: no clash with other runs
		n.must(t, "-n", n.hub, "link", "add", hubEnd, "type", "veth", "peer", "name", "eth0", "netns", node.ns)
		n.must(t, "-n", n.hub, "link", "set", hubEnd, "master", "br0", "up")
		n.must(t, "-n", node.ns, "addr", "add", node.ip+"/24", "dev", "eth0")
		n.must(t, "-n", node.ns, "link", "set", "eth0", "up")
		nodes[name] = node
	}
	return n, nodes
}

// pickPrefix returns a 10.200.N block that no address or route of the
// host's namespace touches, so that two runs, or a real network, do not
// collide with this one.
func (n *network) pickPrefix(t *testing.T) string {
	t.Helper()
	addrs, err := exec.Command(n.ip, "-4", "-o", "addr", "show").Output()
	if err != nil {
		t.Fatalf("ip -4 addr show: %v", err)
	}
	routes, err := exec.Command(n.ip, "-4", "route", "show", "table", "all").Output()
	if err != nil {
		t.Fatalf("ip -4 route show: %v", err)
	}
	for range 50 {
		p := fmt.Sprintf("10.200.%d", 1+mrand.IntN(254))
		if !bytes.Contains(addrs, []byte(p+".")) && !bytes.Contains(routes, []byte(p+".")) {
			return p
		}
	}
	t.Fatal("no free 10.200.N.0/24 block in 50 tries")
	return ""
}

// must runs ip with args and fails the test if it fails.
func (n *network) must(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(n.ip, args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
}

// inNS runs a program inside node's namespace.
func (n *network) inNS(node netNode, prog string, args ...string) error {
	full := append([]string{"netns", "exec", node.ns, prog}, args...)
	if out, err := exec.Command(n.ip, full...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(full, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// iptablesIn adds rules inside node's namespace, one per element of rules.
func (n *network) iptablesIn(node netNode, rules ...[]string) error {
	for _, r := range rules {
		if err := n.inNS(node, n.iptables, append([]string{"-w"}, r...)...); err != nil {
			return err
		}
	}
	return nil
}

// cutOff drops every packet between node and each of peers, both ways
// (the rules sit in node's namespace, so no packet crosses in either
// direction); the host's own traffic still passes.
func (n *network) cutOff(node netNode, peers ...netNode) error {
	var rules [][]string
	for _, p := range peers {
		rules = append(rules,
			[]string{"-A", "INPUT", "-s", p.ip, "-j", "DROP"},
			[]string{"-A", "OUTPUT", "-d", p.ip, "-j", "DROP"})
	}
	return n.iptablesIn(node, rules...)
}

// lose drops each packet between node and the other agents, both ways,
// with probability p; the host's traffic is spared.
func (n *network) lose(node netNode, p float64) error {
	prob := strconv.FormatFloat(p, 'f', -1, 64)
	subnet := n.prefix + ".0/24"
	return n.iptablesIn(node,
		[]string{"-A", "INPUT", "-s", n.hostIP, "-j", "ACCEPT"},
		[]string{"-A", "INPUT", "-s", subnet, "-m", "statistic", "--mode", "random", "--probability", prob, "-j", "DROP"},
		[]string{"-A", "OUTPUT", "-d", n.hostIP, "-j", "ACCEPT"},
		[]string{"-A", "OUTPUT", "-d", subnet, "-m", "statistic", "--mode", "random", "--probability", prob, "-j", "DROP"})
}

// heal removes every rule of node's namespace.
func (n *network) heal(node netNode) error {
	return n.iptablesIn(node, []string{"-F", "INPUT"}, []string{"-F", "OUTPUT"})
}

// linkDown takes node off the network entirely (its eth0 down: the host
// cannot reach it either); linkUp puts it back with its address.
func (n *network) linkDown(node netNode) error {
	return n.inNS(node, n.ip, "link", "set", "eth0", "down")
}

func (n *network) linkUp(node netNode) error {
	return n.inNS(node, n.ip, "link", "set", "eth0", "up")
}
