package imaphub

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeServer is a small in-process IMAP server for what a real server
// won't do: send truncated literals, malformed or unexpected responses.
// It keeps a one-folder mailbox and answers the commands this package
// sends; a hook can replace the answer to any command.
type fakeServer struct {
	t  *testing.T
	ln net.Listener

	mu          sync.Mutex
	caps        string
	uidValidity uint32
	msgs        map[uint32][]byte // uid → raw message
	nextUID     uint32
	// hook, when set, is asked first. It returns the raw answer (with
	// %TAG% for the command's tag) and whether to close the connection
	// after writing it; ok=false falls through to the normal answer.
	hook func(line string) (answer string, hangUp, ok bool)
	// conns are the open connections, for dropAll.
	conns map[net.Conn]bool
	dials int
}

// dropAll ends every open connection the way Dovecot logs out an idle
// client: an untagged BYE, then close.
func (f *fakeServer) dropAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for nc := range f.conns {
		nc.Write([]byte("* BYE Disconnected for inactivity.\r\n"))
		nc.Close()
	}
}

func newFake(t *testing.T) *fakeServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{t: t, ln: ln, caps: "IMAP4rev1 UIDPLUS IDLE NAMESPACE", uidValidity: 7, msgs: map[uint32][]byte{}, nextUID: 1}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		f.mu.Lock()
		for nc := range f.conns {
			nc.Close()
		}
		f.mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { f.serve(nc) })
		}
	})
	return f
}

func (f *fakeServer) config() Config {
	return Config{Addr: f.ln.Addr().String(), User: "u", Password: "p"}
}

// open opens a Store on the fake server and closes it when t ends.
func (f *fakeServer) open(t *testing.T) *Store {
	t.Helper()
	s, err := Open(ctx5(t), f.config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func (f *fakeServer) add(raw string) uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	uid := f.nextUID
	f.nextUID++
	f.msgs[uid] = []byte(raw)
	return uid
}

func (f *fakeServer) setHook(h func(line string) (string, bool, bool)) {
	f.mu.Lock()
	f.hook = h
	f.mu.Unlock()
}

func (f *fakeServer) serve(nc net.Conn) {
	f.mu.Lock()
	if f.conns == nil {
		f.conns = map[net.Conn]bool{}
	}
	f.conns[nc] = true
	f.dials++
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.conns, nc)
		f.mu.Unlock()
		nc.Close()
	}()
	r := bufio.NewReader(nc)
	w := bufio.NewWriter(nc)
	defer w.Flush()
	w.WriteString("* OK fake ready\r\n")
	w.Flush()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		tag, cmd, _ := strings.Cut(line, " ")
		f.mu.Lock()
		hook := f.hook
		f.mu.Unlock()
		if hook != nil {
			if ans, hangUp, ok := hook(cmd); ok {
				w.WriteString(strings.ReplaceAll(ans, "%TAG%", tag))
				w.Flush()
				if hangUp {
					return
				}
				if strings.HasPrefix(strings.ToUpper(cmd), "APPEND") && strings.HasPrefix(ans, "+") {
					// The client sends the message only after a
					// continuation request; a tagged NO ends the APPEND.
					f.readLiteral(cmd, r)
				}
				continue
			}
		}
		if !f.answer(tag, cmd, r, w) {
			return
		}
		w.Flush()
	}
}

func (f *fakeServer) readLiteral(cmd string, r *bufio.Reader) []byte {
	i := strings.LastIndexByte(cmd, '{')
	n, _ := strconv.Atoi(strings.TrimSuffix(cmd[i+1:], "}"))
	b := make([]byte, n+2)
	io.ReadFull(r, b)
	return b[:n]
}

// answer gives the normal answer; false ends the connection.
func (f *fakeServer) answer(tag, cmd string, r *bufio.Reader, w *bufio.Writer) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	up := strings.ToUpper(cmd)
	ok := func() { w.WriteString(tag + " OK done\r\n") }
	switch {
	case strings.HasPrefix(up, "LOGIN"):
		switch {
		case strings.Contains(f.caps, "LOGINDISABLED"):
			w.WriteString(tag + " NO LOGIN is disabled\r\n")
		case cmd[len("LOGIN "):] != `"u" "p"`:
			w.WriteString(tag + " NO [AUTHENTICATIONFAILED] bad credentials\r\n")
		default:
			ok()
		}
	case strings.HasPrefix(up, "AUTHENTICATE PLAIN"):
		resp := strings.TrimPrefix(cmd[len("AUTHENTICATE PLAIN"):], " ")
		if resp == "" {
			w.WriteString("+ \r\n")
			w.Flush()
			f.mu.Unlock()
			line, _ := r.ReadString('\n')
			f.mu.Lock()
			resp = strings.TrimRight(line, "\r\n")
		}
		if b, _ := base64.StdEncoding.DecodeString(resp); string(b) != "\x00u\x00p" {
			w.WriteString(tag + " NO bad credentials\r\n")
			break
		}
		ok()
	case strings.HasPrefix(up, "CREATE"), strings.HasPrefix(up, "UID STORE"), up == "NOOP":
		ok()
	case up == "CAPABILITY":
		w.WriteString("* CAPABILITY " + f.caps + "\r\n")
		ok()
	case up == "NAMESPACE":
		w.WriteString(`* NAMESPACE (("" "/")) NIL NIL` + "\r\n")
		ok()
	case up == "ENABLE QRESYNC":
		w.WriteString("* ENABLED QRESYNC\r\n")
		ok()
	case strings.HasPrefix(up, "LIST"):
		w.WriteString(`* LIST () "/" Tandem` + "\r\n")
		ok()
	case strings.HasPrefix(up, "SELECT"):
		fmt.Fprintf(w, "* %d EXISTS\r\n* OK [UIDVALIDITY %d] ok\r\n", len(f.msgs), f.uidValidity)
		ok()
	case up == "UID SEARCH ALL":
		w.WriteString("* SEARCH")
		for _, uid := range f.uids() {
			fmt.Fprintf(w, " %d", uid)
		}
		w.WriteString("\r\n")
		ok()
	case strings.HasPrefix(up, "UID EXPUNGE "):
		set, _ := parseSet(cmd[len("UID EXPUNGE "):])
		for _, uid := range set.uids() {
			delete(f.msgs, uid)
		}
		ok()
	case strings.HasPrefix(up, "UID FETCH "):
		f.fetch(cmd, w)
		ok()
	case strings.HasPrefix(up, "APPEND"):
		w.WriteString("+ go ahead\r\n")
		w.Flush()
		f.mu.Unlock()
		raw := f.readLiteral(cmd, r)
		uid := f.add(string(raw))
		f.mu.Lock()
		fmt.Fprintf(w, "%s OK [APPENDUID %d %d] done\r\n", tag, f.uidValidity, uid)
	case up == "LOGOUT":
		w.WriteString("* BYE bye\r\n")
		ok()
		return false
	default:
		w.WriteString(tag + " BAD unknown command\r\n")
	}
	return true
}

func (f *fakeServer) uids() []uint32 {
	var u []uint32
	for uid := range f.msgs {
		u = append(u, uid)
	}
	slices.Sort(u)
	return u
}

// fetch answers both FETCH forms this package sends.
func (f *fakeServer) fetch(cmd string, w *bufio.Writer) {
	setStr, items, _ := strings.Cut(cmd[len("UID FETCH "):], " ")
	var want []uint32
	if lo, ok := strings.CutSuffix(setStr, ":*"); ok {
		n, _ := strconv.ParseUint(lo, 10, 32)
		for _, uid := range f.uids() {
			if uid >= uint32(n) {
				want = append(want, uid)
			}
		}
		if len(want) == 0 && len(f.msgs) > 0 { // n:* always returns the last message
			want = append(want, f.uids()[len(f.msgs)-1])
		}
	} else {
		set, _ := parseSet(setStr)
		for _, uid := range set.uids() {
			if _, ok := f.msgs[uid]; ok {
				want = append(want, uid)
			}
		}
	}
	// Like a real server, it answers only the items asked for. (The header
	// block is the whole header, not only the fields asked for.)
	headers := strings.Contains(items, "HEADER.FIELDS")
	bodies := strings.Contains(items, "BODY.PEEK[TEXT]")
	for i, uid := range want {
		hdr, body := splitRaw(f.msgs[uid])
		fmt.Fprintf(w, "* %d FETCH (UID %d", i+1, uid)
		if headers {
			fmt.Fprintf(w, " BODY[HEADER.FIELDS (X)] {%d}\r\n%s", len(hdr), hdr)
		}
		if bodies {
			fmt.Fprintf(w, " BODY[TEXT] {%d}\r\n%s", len(body), body)
		}
		w.WriteString(")\r\n")
	}
}

func splitRaw(raw []byte) (header, body string) {
	s := string(raw)
	if i := strings.Index(s, "\r\n\r\n"); i >= 0 {
		return s[:i+4], s[i+4:]
	}
	return s, ""
}
