package acl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hashicorp/hcl/hcl/ast"
	"github.com/hashicorp/hcl/hcl/token"
)

// parseJSON reads JSON rules into the HCL syntax tree that the rest of the
// parser walks. HCL's own JSON parser is not used: it forgives truncated
// documents and rejects some valid escapes (\/). Duplicate keys are kept,
// as in HCL, so that they merge like repeated blocks.
func parseJSON(rules string) (*ast.ObjectList, error) {
	if !json.Valid([]byte(rules)) {
		var v any
		if err := json.Unmarshal([]byte(rules), &v); err != nil {
			return nil, err
		}
		return nil, errors.New("invalid JSON")
	}
	dec := json.NewDecoder(strings.NewReader(rules))
	dec.UseNumber()
	v, err := jsonNode(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the top-level object")
	}
	obj, ok := v.(*ast.ObjectType)
	if !ok {
		return nil, errors.New("rules are not an object")
	}
	return obj.List, nil
}

// jsonNode reads one JSON value from dec as an HCL node. Strings become
// STRING tokens marked JSON (their Text is JSON-quoted); null becomes a
// STRING token with empty Text, as in HCL's JSON parser.
func jsonNode(dec *json.Decoder) (ast.Node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			list := &ast.ListType{}
			for dec.More() {
				v, err := jsonNode(dec)
				if err != nil {
					return nil, err
				}
				list.List = append(list.List, v)
			}
			_, err := dec.Token() // ]
			return list, err
		}
		obj := &ast.ObjectType{List: &ast.ObjectList{}}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			key, ok := kt.(string)
			if !ok {
				return nil, fmt.Errorf("object key %v is not a string", kt)
			}
			v, err := jsonNode(dec)
			if err != nil {
				return nil, err
			}
			obj.List.Add(&ast.ObjectItem{
				Keys: []*ast.ObjectKey{{Token: jsonString(key)}},
				Val:  v,
			})
		}
		_, err := dec.Token() // }
		return obj, err
	case string:
		return &ast.LiteralType{Token: jsonString(t)}, nil
	case json.Number:
		return &ast.LiteralType{Token: token.Token{Type: token.NUMBER, Text: t.String()}}, nil
	case bool:
		return &ast.LiteralType{Token: token.Token{Type: token.BOOL, Text: fmt.Sprint(t)}}, nil
	case nil:
		return &ast.LiteralType{Token: token.Token{Type: token.STRING, JSON: true}}, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

func jsonString(s string) token.Token {
	b, _ := json.Marshal(s) // a string always marshals
	return token.Token{Type: token.STRING, Text: string(b), JSON: true}
}
