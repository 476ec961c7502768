//go:build unix

package llm

import (
	"net"
	"syscall"
)

// stillOpen reports whether the server has not closed (or reset) the idle
// connection c: a peek that does not wait, one system call. An idle
// HTTP/1.1 connection has nothing to read; EOF or an error means the
// server closed it, and bytes would be an answer to no request.
func stillOpen(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = n < 0 && (rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK)
		return true // never wait: answered either way
	})
	return err == nil && open
}
