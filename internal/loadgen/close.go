package loadgen

import (
	"errors"

	"github.com/gorilla/websocket"
)

type websocketCloseError = websocket.CloseError

// isNormalClose reports whether err is the server's normal close at the
// end of a run's stream.
func isNormalClose(err error, ce **websocketCloseError) bool {
	if errors.As(err, ce) {
		return (*ce).Code == websocket.CloseNormalClosure
	}
	return false
}
