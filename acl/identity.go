package acl

// Consul's synthetic policies: what a service or node identity on a token
// or role grants, as rules of the rule language (the name is validated
// where the identity is written: letters, digits, '-' and '_').

// ServiceIdentityRules are the rules a service identity for name grants:
// write on the service and its sidecar proxy, read of every service and
// node (to discover others).
func ServiceIdentityRules(name string) string {
	return `service "` + name + `" { policy = "write" }
service "` + name + `-sidecar-proxy" { policy = "write" }
service_prefix "" { policy = "read" }
node_prefix "" { policy = "read" }
`
}

// NodeIdentityRules are the rules a node identity for name grants: write
// on the node, read of every service.
func NodeIdentityRules(name string) string {
	return `node "` + name + `" { policy = "write" }
service_prefix "" { policy = "read" }
`
}
