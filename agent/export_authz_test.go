package agent

import "github.com/cairndns/cairn/rpc"

// RPCMethods lists the methods a server agent's RPC port publishes, with
// what each needs.
func RPCMethods(a *Agent) []rpc.MethodInfo { return a.rpcServer.Methods() }

// RPCAddr is the address of a server agent's RPC port.
func RPCAddr(a *Agent) string { return a.rpcServer.Addr().String() }
