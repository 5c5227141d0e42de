package tandemcli

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// scriptedConn is a net.Conn whose peer sends fixed bytes and swallows
// what it is sent.
type scriptedConn struct {
	net.Conn // nil: only the methods below are used
	r        io.Reader
}

func (c *scriptedConn) Read(b []byte) (int, error)       { return c.r.Read(b) }
func (c *scriptedConn) Write(b []byte) (int, error)      { return len(b), nil }
func (c *scriptedConn) Close() error                     { return nil }
func (c *scriptedConn) SetDeadline(time.Time) error      { return nil }
func (c *scriptedConn) SetReadDeadline(time.Time) error  { return nil }
func (c *scriptedConn) SetWriteDeadline(time.Time) error { return nil }

// FuzzIMAPLogin: whatever an IMAP server sends, the login probe ends with
// nil or one *Error line, never a panic, and reads a bounded amount.
func FuzzIMAPLogin(f *testing.F) {
	f.Add([]byte("* OK ready\r\nF1 OK logged in\r\n"))
	f.Add([]byte("* OK [CAPABILITY IMAP4rev1 LOGINDISABLED] ready\r\n"))
	f.Add([]byte("* OK ready\r\n* CAPABILITY IMAP4rev1\r\nF1 NO [AUTHENTICATIONFAILED] no\r\n"))
	f.Add([]byte("* PREAUTH hi\r\n"))
	f.Add([]byte("* BYE go away\r\n"))
	f.Add([]byte("<html><body>404</body></html>"))
	f.Add([]byte(strings.Repeat("x", 70000)))
	f.Fuzz(func(t *testing.T, in []byte) {
		err := imapLogin(&scriptedConn{r: bytes.NewReader(in)}, imapProbe{host: "h", port: 1, user: "u", password: "p"}, time.Second)
		if err == nil {
			return
		}
		var e *Error
		if !errors.As(err, &e) || strings.ContainsAny(e.Msg, "\r\n") || e.Msg == "" {
			t.Fatalf("error %#v is not one line for a person", err)
		}
		if bytes.Contains([]byte(e.Msg), in) && len(in) > 8 {
			t.Fatalf("the server's bytes are in the message: %q", e.Msg)
		}
	})
}

// TestIMAPLoginEndlessLines: a server that never answers the login, but
// keeps talking, is cut off.
func TestIMAPLoginEndlessLines(t *testing.T) {
	r := io.MultiReader(strings.NewReader("* OK hi\r\n"), strings.NewReader(strings.Repeat("* x\r\n", 2000)))
	err := imapLogin(&scriptedConn{r: r}, imapProbe{host: "h", port: 1, user: "u", password: "p"}, time.Second)
	if err == nil || !strings.Contains(err.Error(), "endless untagged lines") {
		t.Fatalf("err %v", err)
	}
}
