package tandem

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// rawIMAP is the vandal's own IMAP connection: plain commands, nothing of
// Ferry's binding, only what RFC 9051 and UIDPLUS give (no MOVE, no
// UNSELECT).
type rawIMAP struct {
	t   *testing.T
	c   net.Conn
	r   *bufio.Reader
	tag int
}

func dialRaw(t *testing.T, addr, user, pass string) *rawIMAP {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatalf("vandal: %v", err)
	}
	x := &rawIMAP{t: t, c: c, r: bufio.NewReader(c)}
	x.line() // greeting
	x.cmd(fmt.Sprintf("LOGIN %q %q", user, pass))
	return x
}

func (x *rawIMAP) line() string {
	x.c.SetReadDeadline(time.Now().Add(30 * time.Second))
	s, err := x.r.ReadString('\n')
	if err != nil {
		x.t.Fatalf("vandal: read: %v", err)
	}
	return strings.TrimRight(s, "\r\n")
}

// cmd sends one command and returns its untagged lines; a NO or BAD fails
// the test.
func (x *rawIMAP) cmd(c string) []string {
	x.t.Helper()
	x.tag++
	tag := fmt.Sprintf("v%d", x.tag)
	fmt.Fprintf(x.c, "%s %s\r\n", tag, c)
	var out []string
	for {
		l := x.line()
		if strings.HasPrefix(l, tag+" ") {
			if !strings.HasPrefix(l, tag+" OK") {
				x.t.Fatalf("vandal: %s: %s", c, l)
			}
			return out
		}
		out = append(out, l)
	}
}

// uids lists the UIDs of the selected folder.
func (x *rawIMAP) uids() []string {
	for _, l := range x.cmd("UID SEARCH ALL") {
		if f, ok := strings.CutPrefix(l, "* SEARCH"); ok {
			return strings.Fields(f)
		}
	}
	return nil
}

// move copies the messages uids of the selected folder to folder and
// removes them here.
func (x *rawIMAP) move(uids []string, folder string) {
	if len(uids) == 0 {
		return
	}
	set := strings.Join(uids, ",")
	x.cmd("UID COPY " + set + " " + folder)
	x.cmd("UID STORE " + set + ` +FLAGS.SILENT (\Deleted)`)
	x.cmd("UID EXPUNGE " + set)
}

func (x *rawIMAP) close() {
	fmt.Fprintf(x.c, "z LOGOUT\r\n")
	x.c.Close()
}
