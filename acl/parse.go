package acl

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/hcl/ast"
	hclparser "github.com/hashicorp/hcl/hcl/parser"
	hclscanner "github.com/hashicorp/hcl/hcl/scanner"
	hclstrconv "github.com/hashicorp/hcl/hcl/strconv"
	"github.com/hashicorp/hcl/hcl/token"
)

// Limits on rules, which arrive from the network.
const (
	// MaxRulesSize is the largest rules text Parse accepts, in bytes.
	MaxRulesSize = 64 << 10
	// MaxRules is the most rules (blocks and top-level values, duplicates
	// counted) Parse accepts in one text.
	MaxRules = 1000
)

// keywords maps each resource keyword of the rule language to its resource
// and kind.
var keywords = map[string]struct {
	res    Resource
	prefix bool
}{
	"service": {ResourceService, false}, "service_prefix": {ResourceService, true},
	"node": {ResourceNode, false}, "node_prefix": {ResourceNode, true},
	"agent": {ResourceAgent, false}, "agent_prefix": {ResourceAgent, true},
	"query": {ResourceQuery, false}, "query_prefix": {ResourceQuery, true},
	"key": {ResourceKey, false}, "key_prefix": {ResourceKey, true},
	"session": {ResourceSession, false}, "session_prefix": {ResourceSession, true},
	"event": {ResourceEvent, false}, "event_prefix": {ResourceEvent, true},
	"operator": {ResourceOperator, false},
	"acl":      {ResourceACL, false},
	"keyring":  {ResourceKeyring, false},
}

// Parse reads rules in Consul's rule language, as HCL or, when the text
// starts with "{", as JSON of the same shape:
//
//	service "web" { policy = "write" }
//	service_prefix "" { policy = "read" }
//	key_prefix "app/" { policy = "list" }
//	operator = "read"
//
//	{"service": {"web": {"policy": "write"}}, "operator": "read"}
//
// Blocks take the key policy (read, write or deny; list too for key and
// key_prefix); service blocks also accept Consul's intentions key, which is
// checked and ignored. Rules for the same resource and segment are merged
// as across policies: the level with the highest precedence (deny, write,
// list, read) wins, whatever the order. An empty text is an empty policy.
//
// Errors are *ParseError and name the resource, the segment and the reason.
// Texts over MaxRulesSize bytes or MaxRules rules are rejected.
func Parse(rules string) (p *Policy, err error) {
	if len(rules) > MaxRulesSize {
		return nil, &ParseError{Reason: fmt.Sprintf("rules are %d bytes, more than the limit of %d", len(rules), MaxRulesSize)}
	}
	// HCL v1's parser has panicked on odd input before; rules come from the
	// network, so a panic in it is a syntax error, not a crash.
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, &ParseError{Reason: "parse rules: " + truncate(fmt.Sprint(r), maxErrorLen)}
		}
	}()
	list, err := parseTree(rules)
	if err != nil {
		return nil, &ParseError{Reason: "parse rules: " + truncate(err.Error(), maxErrorLen)}
	}
	ps := &parser{merged: make(map[ruleKey]Access)}
	for _, item := range list.Items {
		if err := ps.item(item); err != nil {
			return nil, err
		}
	}
	return ps.policy(), nil
}

// parseTree parses rules as JSON when they start with "{", else as HCL.
func parseTree(rules string) (*ast.ObjectList, error) {
	if strings.HasPrefix(strings.TrimLeft(rules, " \t\r\n"), "{") {
		return parseJSON(rules)
	}
	if err := checkDepth(rules); err != nil {
		return nil, err
	}
	f, err := hclparser.Parse([]byte(rules))
	if err != nil {
		return nil, err
	}
	list, ok := f.Node.(*ast.ObjectList)
	if !ok {
		return nil, fmt.Errorf("rules are not an object")
	}
	return list, nil
}

// maxDepth bounds the nesting of blocks and lists in HCL rules; valid
// rules need four levels at most. HCL v1's parser nests an error message
// per level, which takes time and memory quadratic in the depth.
const maxDepth = 32

// maxErrorLen bounds the text of a syntax error echoed back to a client.
const maxErrorLen = 300

// checkDepth rejects HCL rules nested deeper than maxDepth. It reads the
// tokens of HCL's own scanner, which the parser reads too, so it sees the
// structure the parser would; a closing token with nothing open is
// ignored, which can only overestimate the depth.
func checkDepth(rules string) error {
	sc := hclscanner.New([]byte(rules))
	sc.Error = func(token.Pos, string) {} // the parser reports syntax errors
	depth := 0
	for {
		switch sc.Scan().Type {
		case token.EOF:
			return nil
		case token.LBRACE, token.LBRACK:
			depth++
			if depth > maxDepth {
				return fmt.Errorf("blocks or lists nested deeper than %d levels", maxDepth)
			}
		case token.RBRACE, token.RBRACK:
			depth = max(depth-1, 0)
		}
	}
}

// truncate cuts s to at most n bytes, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

type ruleKey struct {
	res     Resource
	segment string
	prefix  bool
}

// parser collects the rules of one text.
type parser struct {
	merged map[ruleKey]Access
	count  int
}

// policy returns the merged rules in canonical order.
func (ps *parser) policy() *Policy {
	rules := make([]Rule, 0, len(ps.merged))
	for k, a := range ps.merged {
		rules = append(rules, Rule{Resource: k.res, Segment: k.segment, Prefix: k.prefix, Access: a})
	}
	slices.SortFunc(rules, compareRules)
	return &Policy{rules: rules}
}

func (ps *parser) add(k ruleKey, a Access) error {
	ps.count++
	if ps.count > MaxRules {
		return &ParseError{Reason: fmt.Sprintf("more than %d rules", MaxRules)}
	}
	ps.merged[k] = max(ps.merged[k], a)
	return nil
}

// item reads one top-level item: a resource block or a top-level value.
// HCL writes `service "web" {…}` as one item with the keys service and web;
// JSON gives the same after HCL flattens it, or nested objects that it did
// not flatten. Both are walked as the same path of keys.
func (ps *parser) item(it *ast.ObjectItem) error {
	keys, err := keyStrings(it)
	if err != nil {
		return &ParseError{Reason: err.Error()}
	}
	if len(keys) == 0 {
		return &ParseError{Reason: "item without a key"}
	}
	kw := keys[0]
	k, ok := keywords[kw]
	if !ok {
		return &ParseError{Resource: kw, Reason: "unknown resource"}
	}
	if k.res.topLevel() {
		if len(keys) > 1 {
			return &ParseError{Resource: kw, Reason: fmt.Sprintf(`takes a policy string, not a block: write %s = "read"`, kw)}
		}
		a, err := ps.access(k.res, it.Val)
		if err != nil {
			return &ParseError{Resource: kw, Reason: err.Error()}
		}
		return ps.add(ruleKey{res: k.res}, a)
	}
	return ps.segments(kw, ruleKey{res: k.res, prefix: k.prefix}, keys[1:], it.Val)
}

// segments reads the blocks of one resource keyword: keys holds the
// segment when the item named it, else val is an object of segments.
func (ps *parser) segments(kw string, k ruleKey, keys []string, val ast.Node) error {
	if len(keys) == 0 {
		lists, ok := objectLists(val)
		if !ok {
			return &ParseError{Resource: kw, Reason: fmt.Sprintf(`must be a block: write %s "name" { policy = "read" }`, kw)}
		}
		for _, list := range lists {
			for _, it := range list.Items {
				sub, err := keyStrings(it)
				if err != nil {
					return &ParseError{Resource: kw, Reason: err.Error()}
				}
				if err := ps.segments(kw, k, sub, it.Val); err != nil {
					return err
				}
			}
		}
		return nil
	}
	k.segment = keys[0]
	var b body
	if err := ps.body(k.res, &b, keys[1:], val); err != nil {
		return &ParseError{Resource: kw, Segment: k.segment, Reason: err.Error(), hasSegment: true}
	}
	if !b.hasPolicy {
		return &ParseError{Resource: kw, Segment: k.segment, Reason: "policy is missing", hasSegment: true}
	}
	if err := ps.add(k, b.policy); err != nil {
		return err
	}
	return nil
}

// body holds the keys of one block.
type body struct {
	policy        Access
	hasPolicy     bool
	hasIntentions bool
}

// body reads the keys of one block into b: keys holds the key when the
// item named it, else val is an object of keys.
func (ps *parser) body(res Resource, b *body, keys []string, val ast.Node) error {
	if len(keys) == 0 {
		lists, ok := objectLists(val)
		if !ok {
			return fmt.Errorf(`must be a block: { policy = "read" }`)
		}
		for _, list := range lists {
			for _, it := range list.Items {
				sub, err := keyStrings(it)
				if err != nil {
					return err
				}
				if err := ps.body(res, b, sub, it.Val); err != nil {
					return err
				}
			}
		}
		return nil
	}
	name := keys[0]
	switch {
	case name == "policy":
		if b.hasPolicy {
			return fmt.Errorf("policy given more than once")
		}
	case name == "intentions" && res == ResourceService:
		if b.hasIntentions {
			return fmt.Errorf("intentions given more than once")
		}
	default:
		return fmt.Errorf("unknown key %q", name)
	}
	if len(keys) > 1 {
		return fmt.Errorf(`%s must be a string: "read", "write" or "deny"`, name)
	}
	if name == "intentions" {
		// Intentions are not part of cairn: the value is checked as Consul
		// does and then ignored, so Consul's rules load unchanged.
		if _, err := ps.access(ResourceService, val); err != nil {
			return fmt.Errorf("intentions: %w", err)
		}
		b.hasIntentions = true
		return nil
	}
	a, err := ps.access(res, val)
	if err != nil {
		return err
	}
	b.policy, b.hasPolicy = a, true
	return nil
}

// access reads a policy value ("read", "write", "deny", and "list" for
// keys).
func (ps *parser) access(res Resource, val ast.Node) (Access, error) {
	lit, ok := val.(*ast.LiteralType)
	if !ok || lit.Token.Type != token.STRING || lit.Token.Text == "" {
		return AccessNone, fmt.Errorf(`policy must be a string: "read", "write" or "deny"`)
	}
	s, err := unquote(lit.Token)
	if err != nil {
		return AccessNone, fmt.Errorf("policy: %w", err)
	}
	switch s {
	case "read":
		return AccessRead, nil
	case "write":
		return AccessWrite, nil
	case "deny":
		return AccessDeny, nil
	case "list":
		if res == ResourceKey {
			return AccessList, nil
		}
		return AccessNone, fmt.Errorf(`policy "list" is only valid for key and key_prefix`)
	}
	if res == ResourceKey {
		return AccessNone, fmt.Errorf("policy %q is not one of read, list, write, deny", s)
	}
	return AccessNone, fmt.Errorf("policy %q is not one of read, write, deny", s)
}

// objectLists returns the object(s) of val: an object, or a list of
// objects (HCL's and JSON's way of repeating a block).
func objectLists(val ast.Node) ([]*ast.ObjectList, bool) {
	switch v := val.(type) {
	case *ast.ObjectType:
		if v.List == nil {
			return nil, true
		}
		return []*ast.ObjectList{v.List}, true
	case *ast.ListType:
		lists := make([]*ast.ObjectList, 0, len(v.List))
		for _, elem := range v.List {
			o, ok := elem.(*ast.ObjectType)
			if !ok {
				return nil, false
			}
			if o.List != nil {
				lists = append(lists, o.List)
			}
		}
		return lists, true
	}
	return nil, false
}

// keyStrings returns the item's keys as strings.
func keyStrings(it *ast.ObjectItem) ([]string, error) {
	keys := make([]string, len(it.Keys))
	for i, k := range it.Keys {
		switch k.Token.Type {
		case token.IDENT:
			keys[i] = k.Token.Text
		case token.STRING:
			s, err := unquote(k.Token)
			if err != nil {
				return nil, fmt.Errorf("key %s: %w", k.Token.Text, err)
			}
			keys[i] = s
		default:
			return nil, fmt.Errorf("key %s is not a name or a string", k.Token.Text)
		}
	}
	return keys, nil
}

// unquote returns the value of a string token, without the panics of
// token.Value: JSON strings by JSON's rules, HCL strings by HCL's.
func unquote(t token.Token) (string, error) {
	if t.JSON {
		var s string
		if err := json.Unmarshal([]byte(t.Text), &s); err != nil {
			return "", fmt.Errorf("invalid string %s", t.Text)
		}
		return s, nil
	}
	s, err := hclstrconv.Unquote(t.Text)
	if err != nil {
		return "", fmt.Errorf("invalid string %s", t.Text)
	}
	return s, nil
}
