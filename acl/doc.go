// Package acl owns cairn's access control language and its authorizer: the
// Consul-style rules that say which services, nodes, agents, prepared
// queries, keys and sessions a token may read or write, and the Authorizer
// that answers "may this token do X to Y" for a set of policies.
//
// Parse turns rules written in HCL or JSON into a Policy; New merges the
// policies of one token into an Authorizer. For a name, an exact rule beats
// every prefix rule and the longest matching prefix beats shorter ones.
// Rules from several policies for the same exact name or the same prefix
// merge by precedence: deny over write over list over read. write implies
// list and read; list (keys only) implies read. A name no rule matches gets
// the default (allow or deny), except ACL management (acl:read, acl:write),
// which only an explicit acl rule or ManageAll grants.
//
// Names are compared byte for byte, as stored: the package does not fold
// case, so callers that lowercase DNS names must match rules against the
// catalog's spelling of a name, not the question's.
//
// Tokens and stored policies are data of the catalog, not of this package:
// acl imports nothing of cairn and does no I/O. The errors it defines
// (PermissionDeniedError, ErrPermissionDenied, ErrNotFound) are the ones
// every layer that enforces ACLs returns.
//
// Concurrency: a Policy and an Authorizer are immutable once built and safe
// for concurrent use. The Authorizer's checks do not allocate; the DNS path
// calls ServiceRead and NodeRead per question.
package acl
