package server

import (
	"bytes"
	"net"
	"strings"
	"testing"
)

// countConn records each Write that reaches the network.
type countConn struct {
	net.Conn
	writes [][]byte
}

func (c *countConn) Write(p []byte) (int, error) {
	c.writes = append(c.writes, bytes.Clone(p))
	return len(p), nil
}

func TestCorkConnBatchesWrites(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		do     func(c *corkConn)
		writes []string // what reached the network, write by write
	}{
		{"uncorked writes pass through", func(c *corkConn) {
			c.Write([]byte("a"))
			c.Write([]byte("b"))
		}, []string{"a", "b"}},
		{"corked writes leave together", func(c *corkConn) {
			c.cork()
			c.Write([]byte("a"))
			c.Write([]byte("b"))
			c.uncork()
			c.Write([]byte("c"))
		}, []string{"ab", "c"}},
		{"nested corks flush at the outermost uncork", func(c *corkConn) {
			c.cork()
			c.Write([]byte("a"))
			c.cork()
			c.Write([]byte("b"))
			c.uncork()
			c.Write([]byte("c"))
			c.uncork()
		}, []string{"abc"}},
		{"an empty batch writes nothing", func(c *corkConn) {
			c.cork()
			c.uncork()
		}, nil},
		{"a batch over the limit is sent as it fills", func(c *corkConn) {
			c.cork()
			c.Write([]byte(strings.Repeat("x", corkLimit)))
			c.Write([]byte("y"))
			c.uncork()
		}, []string{strings.Repeat("x", corkLimit), "y"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nc := &countConn{}
			c := &corkConn{Conn: nc}
			tc.do(c)
			if len(nc.writes) != len(tc.writes) {
				t.Fatalf("%d writes, want %d", len(nc.writes), len(tc.writes))
			}
			for i, w := range tc.writes {
				if string(nc.writes[i]) != w {
					t.Errorf("write %d = %.20q..., want %.20q...", i, nc.writes[i], w)
				}
			}
		})
	}
}
