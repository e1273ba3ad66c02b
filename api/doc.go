// Package api is the Go client of a cairn agent's HTTP API.
//
// The API keeps the paths and JSON shapes of Consul's /v1/agent, /v1/catalog,
// /v1/health, /v1/status, /v1/operator/raft and /v1/acl endpoints, so the
// types here carry Consul's field names and code written against Consul's client reads
// the same way (Member is the exception: its status and role are names rather
// than Consul's numbers and tags):
//
//	client, err := api.NewClient(api.DefaultConfig())
//	if err != nil {
//		return err
//	}
//	err = client.Agent().ServiceRegister(ctx, &api.AgentServiceRegistration{
//		Name: "web",
//		Port: 8080,
//	})
//
// Every call takes a context first; cancelling it abandons the request.
//
// DefaultConfig reads the environment as Consul's client does, with CAIRN_
// for CONSUL_: the address (CAIRN_HTTP_ADDR, made https by
// CAIRN_HTTP_SSL=true), the ACL token sent with every request
// (CAIRN_HTTP_TOKEN), and the CA, client certificate and server name for
// HTTPS (CAIRN_CACERT, CAIRN_CLIENT_CERT, CAIRN_CLIENT_KEY,
// CAIRN_TLS_SERVER_NAME). NewClient refuses a Config it cannot use with a
// *ConfigError naming the field.
//
// Errors of calls come in two kinds. When the agent answers with a status
// other than 2xx the error is a *StatusError carrying the code and the
// agent's message (for a rejected field, the field and the reason; for a
// refused token, 403 and the agent's "Permission denied: ..."). When the
// agent cannot be reached at all (connection refused, unknown host,
// timeout, a failed TLS handshake) the error is an *UnreachableError whose
// text is one line naming the address and the root cause. Both are matched
// with errors.As.
//
// The package imports only the standard library. A Client is safe for
// concurrent use by several goroutines.
package api
