package api_test

import (
	"errors"
	"net/http"
	"reflect"
	"testing"

	"github.com/cairndns/cairn/api"
)

// TestTxnApplied: Txn sends the operations as Consul's JSON array (Value
// in base64) with ?dc, and reports an applied transaction's results.
func TestTxnApplied(t *testing.T) {
	c, seen := kvAgent(t, http.StatusOK, `{"Results":[{"KV":{"Key":"a","Flags":2,"Value":null,"LockIndex":0,"CreateIndex":5,"ModifyIndex":5}}],"Errors":null}`)
	ok, resp, _, err := c.Txn().Txn(t.Context(), api.TxnOps{
		{KV: &api.KVTxnOp{Verb: api.KVSet, Key: "a", Value: []byte("hi"), Flags: 2}},
		{KV: &api.KVTxnOp{Verb: api.KVDelete, Key: "b"}},
	}, &api.QueryOptions{Datacenter: "dc2"})
	if err != nil || !ok {
		t.Fatalf("Txn: got %v, %v; want applied", ok, err)
	}
	want := api.TxnResults{{KV: &api.KVPair{Key: "a", Flags: 2, CreateIndex: 5, ModifyIndex: 5}}}
	if !reflect.DeepEqual(resp.Results, want) || resp.Errors != nil {
		t.Errorf("response: got %+v, %+v; want %+v and no errors", resp.Results, resp.Errors, want)
	}
	body := `[{"KV":{"Verb":"set","Key":"a","Value":"aGk=","Flags":2,"Index":0,"Session":""}},{"KV":{"Verb":"delete","Key":"b","Value":null,"Flags":0,"Index":0,"Session":""}}]`
	wantReq := kvRequest{Method: http.MethodPut, Path: "/v1/txn", Query: "dc=dc2", ContentType: "application/json", Body: body}
	if got := seen(); len(got) != 1 || !reflect.DeepEqual(got[0], wantReq) {
		t.Errorf("request: got %+v, want %+v", got, wantReq)
	}
}

// TestTxnRolledBack: a 409 is not an error: Txn reports false with the
// operations' errors and the meta of the answer.
func TestTxnRolledBack(t *testing.T) {
	c, _ := kvAgent(t, http.StatusConflict, `{"Results":null,"Errors":[{"OpIndex":1,"What":"key \"x\" doesn't exist"}]}`)
	ok, resp, meta, err := c.Txn().Txn(t.Context(), api.TxnOps{
		{KV: &api.KVTxnOp{Verb: api.KVSet, Key: "a"}},
		{KV: &api.KVTxnOp{Verb: api.KVGet, Key: "x"}},
	}, nil)
	if err != nil || ok {
		t.Fatalf("Txn: got %v, %v; want rolled back without error", ok, err)
	}
	want := api.TxnErrors{{OpIndex: 1, What: `key "x" doesn't exist`}}
	if !reflect.DeepEqual(resp.Errors, want) || resp.Results != nil {
		t.Errorf("response: got %+v, %+v; want errors %+v", resp.Results, resp.Errors, want)
	}
	if meta == nil || meta.LastIndex != 17 {
		t.Errorf("meta: got %+v, want index 17", meta)
	}
}

// TestTxnRefused: a 400 is a *StatusError naming the field.
func TestTxnRefused(t *testing.T) {
	c, _ := kvAgent(t, http.StatusBadRequest, `{"error":"Ops[0].KV.Key: is required","field":"Ops[0].KV.Key","reason":"is required"}`)
	ok, resp, _, err := c.Txn().Txn(t.Context(), api.TxnOps{{KV: &api.KVTxnOp{Verb: api.KVGet}}}, nil)
	se, isStatus := errors.AsType[*api.StatusError](err)
	if ok || resp != nil || !isStatus || se.Code != http.StatusBadRequest || se.Field != "Ops[0].KV.Key" {
		t.Errorf("Txn: got %v, %+v, %v; want a 400 StatusError on Ops[0].KV.Key", ok, resp, err)
	}
}
