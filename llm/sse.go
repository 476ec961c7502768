package llm

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"

	"github.com/openai/openai-go/v3/packages/ssestream"
)

// sseDecoder reads server-sent events as openai-go's ssestream decoder
// does (data lines joined with a newline after each, events dispatched on
// a blank line, comments and unknown fields skipped, LF or CRLF line ends,
// a last event without its blank line dropped), with less garbage: the
// line reader and the data buffer come from a pool, and the buffer serves
// every event of the stream. An Event's Data is valid until the next call
// to Next, and not after the stream ends (Next returned false, or Close).
type sseDecoder struct {
	rc   io.ReadCloser
	bufs *sseBufs // nil once released
	data []byte
	line []byte // a line longer than the reader's buffer, assembled
	evt  ssestream.Event
	err  error
}

// maxSSEData bounds one event's data, as the SDK's scanner bounds a line.
const maxSSEData = bufio.MaxScanTokenSize << 9

var errSSETooLong = errors.New("server-sent event too long")

// sseBufs is what a decoder borrows from the pool: the line reader and the
// data buffer (a stream's events grew a new one, about 0.8 KB a call).
type sseBufs struct {
	rd   *bufio.Reader
	data []byte
}

var ssePool = sync.Pool{New: func() any { return &sseBufs{rd: bufio.NewReaderSize(nil, 4096)} }}

// maxPooledSSEData: a larger data buffer (one huge event) is dropped, not
// kept in the pool.
const maxPooledSSEData = 64 << 10

func newSSEDecoder(rc io.ReadCloser) *sseDecoder {
	b := ssePool.Get().(*sseBufs)
	b.rd.Reset(rc)
	return &sseDecoder{rc: rc, bufs: b, data: b.data[:0]}
}

// readLine returns the next line without its line end; the slice is valid
// until the next call.
func (s *sseDecoder) readLine() ([]byte, error) {
	b, err := s.bufs.rd.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		s.line = append(s.line[:0], b...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(s.line) > maxSSEData {
				return nil, errSSETooLong
			}
			b, err = s.bufs.rd.ReadSlice('\n')
			s.line = append(s.line, b...)
		}
		b = s.line
	}
	if err != nil && (err != io.EOF || len(b) == 0) {
		return nil, err
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r")), nil
}

func (s *sseDecoder) Next() bool {
	if s.err != nil || s.bufs == nil {
		return false
	}
	event := ""
	s.data = s.data[:0]
	for {
		txt, err := s.readLine()
		if err != nil {
			if err != io.EOF {
				s.err = err
			}
			s.release()
			return false
		}
		if len(txt) == 0 {
			if len(s.data) == 0 {
				event = ""
				continue
			}
			s.evt = ssestream.Event{Type: event, Data: s.data}
			return true
		}
		name, value, _ := bytes.Cut(txt, []byte(":"))
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(name) {
		case "event":
			event = string(value)
		case "data":
			if len(s.data)+len(value) > maxSSEData {
				s.err = errSSETooLong
				s.release()
				return false
			}
			s.data = append(s.data, value...)
			s.data = append(s.data, '\n')
		}
	}
}

// release returns the line reader and the data buffer to the pool once the
// stream is over.
func (s *sseDecoder) release() {
	if s.bufs == nil {
		return
	}
	s.bufs.rd.Reset(nil)
	s.bufs.data = nil
	if cap(s.data) <= maxPooledSSEData {
		s.bufs.data = s.data[:0]
	}
	ssePool.Put(s.bufs)
	s.bufs, s.data = nil, nil
	s.evt = ssestream.Event{}
}

func (s *sseDecoder) Event() ssestream.Event { return s.evt }

func (s *sseDecoder) Close() error {
	s.release()
	return s.rc.Close()
}

func (s *sseDecoder) Err() error { return s.err }
