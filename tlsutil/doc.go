// Package tlsutil owns cairn's TLS: creating a certificate authority and
// the certificates of servers and clients (what "cairn tls ca create" and
// "cairn tls cert create" do), and the tls.Configs of the server port
// (internal RPC and Raft) and of HTTPS, built from a Config of files and
// verify flags, reloadable while they are in use.
//
// The naming scheme is Consul's with cairn's domain: a server of
// datacenter dc1 holds a certificate for server.dc1.cluster, a client
// agent one for client.dc1.cluster, both signed by the agent CA. Whether a
// peer is a server of a datacenter is decided by that name alone (see
// Configurator.PeerIsServer and VerifyServerHostname): a client agent's
// certificate may serve HTTPS (it has ServerAuth, as Consul's does) but
// can never pass for a server.
//
// tlsutil imports the standard library only, and no other cairn package.
//
// Concurrency: a Configurator's methods may be called from any goroutine;
// the tls.Configs it hands out read the certificates current at each
// handshake, so Reload (or Watch) applies to new connections without
// rebuilding listeners or dialers. Connections already established keep
// the certificates they were made with.
package tlsutil
