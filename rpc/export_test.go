package rpc

// NewRemoteError decodes a wire error's text, for tests outside the
// package that check what a caller makes of an error a server sent.
var NewRemoteError = newRemoteError
