package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/hcl/ast"
	"github.com/hashicorp/hcl/hcl/token"
)

// checkFile walks a parsed config file against the hcl tags of
// fileConfig, before hcl decodes it: a key no field is tagged with is
// refused with its dotted path (dns_config.rrl.foo), and a value of the
// wrong type with its key, the value and what the key takes. hcl's own
// errors name neither (`strconv.ParseInt: parsing "fifty"`), and it
// ignores keys it has no field for. The structs are the one list of keys.
func checkFile(f *ast.File) error {
	return checkValue("", reflect.TypeFor[fileConfig](), f.Node)
}

// checkValue checks node against a field of type t; key names it.
func checkValue(key string, t reflect.Type, node ast.Node) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		list, ok := objectList(node)
		if !ok {
			return wrongType(key, node, "a block")
		}
		if t.Kind() == reflect.Map {
			return checkMap(key, t.Elem(), list)
		}
		return checkObject(key, t, list)
	case reflect.Slice:
		l, ok := node.(*ast.ListType)
		if list, isObj := objectList(node); !ok && isObj && deref(t.Elem()).Kind() == reflect.Struct {
			// A list of blocks (service) may be given one block at a time.
			return checkObject(key, deref(t.Elem()), list)
		}
		if !ok {
			return wrongType(key, node, "a list")
		}
		for i, elem := range l.List {
			if err := checkValue(fmt.Sprintf("%s[%d]", key, i), t.Elem(), elem); err != nil {
				return err
			}
		}
		return nil
	}
	lit, ok := node.(*ast.LiteralType)
	if ok && literalFits(t.Kind(), lit.Token) {
		return nil
	}
	return wrongType(key, node, kindName(t.Kind()))
}

// literalFits reports whether hcl decodes tok into a field of kind k
// (a number into a string, a quoted whole number into an int, as hcl does).
func literalFits(k reflect.Kind, tok token.Token) bool {
	switch k {
	case reflect.String:
		return tok.Type == token.STRING || tok.Type == token.HEREDOC || tok.Type == token.NUMBER
	case reflect.Bool:
		return tok.Type == token.BOOL
	case reflect.Int:
		text := tok.Text
		if tok.Type == token.STRING {
			s, ok := tok.Value().(string)
			if !ok {
				return false
			}
			text = s
		} else if tok.Type != token.NUMBER {
			return false
		}
		_, err := strconv.ParseInt(text, 0, 0)
		return err == nil
	case reflect.Float64:
		return tok.Type == token.NUMBER || tok.Type == token.FLOAT
	}
	return false
}

// kindName says what a value of kind k is written as.
func kindName(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int:
		return "a whole number"
	case reflect.Float64:
		return "a number"
	}
	return k.String()
}

func wrongType(key string, node ast.Node, want string) error {
	got := "a block"
	switch n := node.(type) {
	case *ast.LiteralType:
		got = n.Token.Text
	case *ast.ListType:
		got = "a list"
	}
	return &FieldError{Field: key, Reason: fmt.Sprintf("got %s, want %s", got, want)}
}

// objectList returns the items of a block. A key with labels
// (dns_config "rrl" { … }) reaches here as a list of the item with its
// labels left.
func objectList(node ast.Node) (*ast.ObjectList, bool) {
	switch n := node.(type) {
	case *ast.ObjectType:
		return n.List, true
	case *ast.ObjectList:
		return n, true
	}
	return nil, false
}

// checkObject checks the items of a block against the struct t. Items
// with labels that share a first key (tls "https" { … } beside
// tls "defaults" { … }, or a JSON block of blocks, which hcl flattens
// that way) are one block to hcl's decoder, so they are checked as one;
// the same block written twice without labels is refused, as hcl would
// keep only the first.
func checkObject(prefix string, t reflect.Type, list *ast.ObjectList) error {
	fields := map[string]reflect.Type{}
	tagFields(t, fields)
	var names []string
	items := map[string][]*ast.ObjectItem{}
	for _, item := range list.Items {
		name := keyName(item.Keys[0])
		if _, ok := fields[name]; !ok {
			// Consul's loader matches keys in any case, with or without
			// underscores ("Meta", "EnableTagOverride"): such a key is
			// renamed to the one the decoder looks for.
			if canon, _, ok := looseField(fields, name); ok {
				item.Keys[0].Token = token.Token{Type: token.STRING, Text: strconv.Quote(canon), JSON: item.Keys[0].Token.JSON}
				name = canon
			}
		}
		if _, seen := items[name]; !seen {
			names = append(names, name)
		}
		items[name] = append(items[name], item)
	}
	for _, name := range names {
		key := name
		if prefix != "" {
			key = prefix + "." + name
		}
		ft, ok := fields[name]
		if !ok {
			return &FieldError{Field: key, Reason: "unknown key"}
		}
		group := items[name]
		if k := deref(ft).Kind(); k == reflect.Struct || k == reflect.Map {
			labelled := &ast.ObjectList{}
			for _, item := range group {
				if len(item.Keys) > 1 {
					labelled.Items = append(labelled.Items, &ast.ObjectItem{Keys: item.Keys[1:], Val: item.Val})
				}
			}
			switch {
			case len(labelled.Items) == len(group):
				if err := checkValue(key, ft, labelled); err != nil {
					return err
				}
				continue
			case len(group) > 1:
				return &FieldError{Field: key, Reason: "given more than once; write one block"}
			}
		}
		for _, item := range group {
			if err := checkValue(key, ft, itemValue(item)); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkMap checks the values of a block of the user's own keys (node_meta,
// service_ttl); its keys are any.
func checkMap(prefix string, elem reflect.Type, list *ast.ObjectList) error {
	for _, item := range list.Items {
		key := prefix + "[" + keyName(item.Keys[0]) + "]"
		if err := checkValue(key, elem, itemValue(item)); err != nil {
			return err
		}
	}
	return nil
}

// itemValue is the value of item's first key: its value, or, for a key
// with labels, the block the labels open.
func itemValue(item *ast.ObjectItem) ast.Node {
	if len(item.Keys) == 1 {
		return item.Val
	}
	return &ast.ObjectList{Items: []*ast.ObjectItem{{Keys: item.Keys[1:], Val: item.Val}}}
}

func keyName(k *ast.ObjectKey) string {
	if s, ok := k.Token.Value().(string); ok {
		return s
	}
	return k.Token.Text
}

// tagFields adds the fields of struct t by their hcl key, those of
// embedded ",squash" structs too.
func tagFields(t reflect.Type, out map[string]reflect.Type) {
	for f := range t.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("hcl"), ",")
		switch {
		case opts == "squash":
			tagFields(f.Type, out)
		case name != "":
			out[name] = f.Type
		}
	}
}

// looseField finds the field whose key is name but for case and
// underscores.
func looseField(fields map[string]reflect.Type, name string) (string, reflect.Type, bool) {
	norm := func(s string) string { return strings.ToLower(strings.ReplaceAll(s, "_", "")) }
	want := norm(name)
	for k, t := range fields {
		if norm(k) == want {
			return k, t, true
		}
	}
	return "", nil, false
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}
