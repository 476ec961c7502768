//go:build !unix

package llm

import "net"

// stillOpen cannot peek without waiting here: a connection the server
// closed while idle fails its next call's write or read instead.
func stillOpen(net.Conn) bool { return true }
