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
// line reader comes from a pool and one data buffer serves every event of
// the stream. An Event's Data is valid until the next call to Next.
type sseDecoder struct {
	rc   io.ReadCloser
	rd   *bufio.Reader
	data []byte
	line []byte // a line longer than the reader's buffer, assembled
	evt  ssestream.Event
	err  error
}

// maxSSEData bounds one event's data, as the SDK's scanner bounds a line.
const maxSSEData = bufio.MaxScanTokenSize << 9

var errSSETooLong = errors.New("server-sent event too long")

var sseReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}

func newSSEDecoder(rc io.ReadCloser) *sseDecoder {
	rd := sseReaders.Get().(*bufio.Reader)
	rd.Reset(rc)
	return &sseDecoder{rc: rc, rd: rd}
}

// readLine returns the next line without its line end; the slice is valid
// until the next call.
func (s *sseDecoder) readLine() ([]byte, error) {
	b, err := s.rd.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		s.line = append(s.line[:0], b...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(s.line) > maxSSEData {
				return nil, errSSETooLong
			}
			b, err = s.rd.ReadSlice('\n')
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
	if s.err != nil || s.rd == nil {
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

// release returns the line reader to the pool once the stream is over.
func (s *sseDecoder) release() {
	if s.rd != nil {
		s.rd.Reset(nil)
		sseReaders.Put(s.rd)
		s.rd = nil
	}
}

func (s *sseDecoder) Event() ssestream.Event { return s.evt }

func (s *sseDecoder) Close() error {
	s.release()
	return s.rc.Close()
}

func (s *sseDecoder) Err() error { return s.err }
