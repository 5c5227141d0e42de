package jmaphub

import (
	"bufio"
	"bytes"
	"io"
	"strings"
)

// maxEventBytes bounds one server-sent event (a StateChange is small).
const maxEventBytes = 1 << 20

// sseEvent is one dispatched server-sent event.
type sseEvent struct {
	Type string // the "event" field; "" for the default type
	Data string // the "data" lines joined by "\n"
}

// sseReader parses a text/event-stream (WHATWG HTML, "Server-sent events",
// §9.2.6): lines end in CRLF, LF or CR; a line starting with ':' is a
// comment; an empty line dispatches the event. Written by hand: the standard
// library has no event-stream parser and this one is 60 lines.
type sseReader struct {
	sc *bufio.Scanner
}

func newSSEReader(r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxEventBytes)
	sc.Split(scanSSELines)
	return &sseReader{sc: sc}
}

// next returns the next event with data, or the stream's error (io.EOF at
// its end; bufio.ErrTooLong for an oversized line).
func (r *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	var data strings.Builder
	hasData := false
	for r.sc.Scan() {
		line := r.sc.Text()
		if line == "" {
			if hasData {
				ev.Data = data.String()
				return ev, nil
			}
			ev = sseEvent{}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev.Type = value
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			if data.Len()+len(value) > maxEventBytes {
				return sseEvent{}, bufio.ErrTooLong
			}
			data.WriteString(value)
			hasData = true
		}
		// "id" and "retry" are not needed: every reconnect runs changes.
	}
	if err := r.sc.Err(); err != nil {
		return sseEvent{}, err
	}
	return sseEvent{}, io.EOF
}

// scanSSELines splits at CRLF, LF or a lone CR.
func scanSSELines(data []byte, atEOF bool) (int, []byte, error) {
	i := bytes.IndexAny(data, "\r\n")
	if i < 0 {
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	}
	if data[i] == '\r' {
		if i+1 == len(data) && !atEOF {
			return 0, nil, nil // a CR at the end of the buffer: maybe CRLF
		}
		if i+1 < len(data) && data[i+1] == '\n' {
			return i + 2, data[:i], nil
		}
	}
	return i + 1, data[:i], nil
}
