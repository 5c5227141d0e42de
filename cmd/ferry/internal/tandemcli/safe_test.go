package tandemcli_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// unsafeOut reports the first character in s that could take over a
// terminal: a control character other than a newline, or one that
// reorders text (bidi overrides, isolates, marks).
func unsafeOut(s string) (rune, bool) {
	for _, r := range s {
		switch {
		case r == '\n':
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f,
			r == 0x061c, r == 0x200e, r == 0x200f,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x2028, r == 0x2029:
			return r, true
		case r == utf8.RuneError:
			return r, true
		}
	}
	return 0, false
}

// safeOut fails the test if a command's output could take over a terminal.
func safeOut(t *testing.T, what, out string) {
	t.Helper()
	if r, bad := unsafeOut(out); bad {
		t.Errorf("%s prints %U raw:\n%q", what, r, out)
	}
}

// TestPeerTextSafeDovecot: what another member wrote (a list name, item
// titles, a field value, a tag, a person's name) with escape sequences,
// line breaks and a right-to-left override reaches neither stdout nor
// stderr raw in show, lists, members, requests, sync, status and sync's
// list of arrivals; each item stays on one line; --json keeps the exact
// values; and two titles that differ only in their Unicode form are told
// apart by ID.
func TestPeerTextSafeDovecot(t *testing.T) {
	const (
		evilList  = "Ho\x1b[2Jme\u202e"
		evilTitle = "\x1b[31mRed\x1b[0m\nFAKE LINE"
		rtlTitle  = "abc\u202edef\u2066x\u2069"
		evilValue = "1\r\n2\u0085"
		evilTag   = "t\x1b]0;pwned\x07"
		evilName  = "Jes\x1b[1Aper\u202e"
		nfc, nfd  = "Caf\u00e9", "Cafe\u0301"
	)
	a := aimeeOnDovecot(t, evilList)
	a.ok("add", evilList, evilTitle, "qty="+evilValue, "--tag", evilTag)
	a.ok("add", evilList, rtlTitle)
	a.ok("add", evilList, nfc)
	a.ok("add", evilList, nfd)
	var inv struct{ Link string }
	a.jsonOut(&inv, "share", evilList, "--link")

	j := newDevice(t, "jesper")
	j.ok("init", "--name", evilName)
	j.ok("join", inv.Link)
	out := a.ok("requests")
	safeOut(t, "requests", out)
	if !strings.Contains(out, `Jes\u001b[1Aper\u202e wants to join Ho\u001b[2Jme\u202e as writer`) {
		t.Errorf("requests does not show the escaped name:\n%s", out)
	}
	var rs []struct{ ID, Name string }
	a.jsonOut(&rs, "requests")
	if len(rs) != 1 || rs[0].Name != evilName {
		t.Fatalf("requests --json does not keep the exact name: %+v", rs)
	}
	safeOut(t, "approve", a.ok("approve", rs[0].ID))

	out = j.ok("sync")
	safeOut(t, "sync", out)
	for _, cmd := range [][]string{{"show", evilList}, {"lists"}, {"members", evilList}, {"status"}, {"show", evilList, evilTitle}} {
		out := j.ok(cmd...)
		safeOut(t, strings.Join(cmd, " "), out)
		if strings.Contains(out, "FAKE LINE") && strings.Contains(out, "\nFAKE LINE") {
			t.Errorf("%s breaks a title over two lines:\n%s", cmd[0], out)
		}
	}
	out = j.ok("show", evilList)
	for _, want := range []string{`\u001b[31mRed\u001b[0m\u000aFAKE LINE  qty 1\u000d\u000a2\u0085  #t\u001b]0;pwned\u0007`, `abc\u202edef\u2066x\u2069`} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n"); n != 5 { // the header and four items
		t.Errorf("show prints %d lines for four items, want 5:\n%s", n, out)
	}
	var show struct {
		List  struct{ Name string }
		Items []struct {
			Title  string
			Tags   []string
			Fields map[string]struct{ Values []struct{ Value string } }
		}
	}
	j.jsonOut(&show, "show", evilList)
	titles := map[string]bool{}
	for _, it := range show.Items {
		titles[it.Title] = true
		if it.Title == evilTitle && (len(it.Tags) != 1 || it.Tags[0] != evilTag || it.Fields["qty"].Values[0].Value != evilValue) {
			t.Errorf("show --json changed what Aimee wrote: %+v", it)
		}
	}
	if show.List.Name != evilList || !titles[evilTitle] || !titles[rtlTitle] || !titles[nfc] || !titles[nfd] {
		t.Errorf("show --json does not keep the exact text: %+v", show)
	}

	// Café typed two ways: the name is ambiguous, the IDs tell them apart.
	r := j.run("done", evilList, nfc)
	wantErr(t, r, 1, "give the ID of the one you mean")
	safeOut(t, "an error", r.err)
	_, named, _ := strings.Cut(r.err, "mean, ")
	named, _, _ = strings.Cut(named, " (")
	ids := strings.Split(named, " or ")
	if len(ids) != 2 {
		t.Fatalf("the ambiguity names %d IDs: %s", len(ids), r.err)
	}
	if out := j.ok("done", evilList, ids[0]); !strings.HasPrefix(out, "Done: Caf") {
		t.Errorf("done by ID: %s", out)
	}

	// What arrives at a sync is listed safely too.
	a.ok("add", evilList, "\x1b[5mBlink\u202e")
	a.ok("sync")
	out = j.ok("sync")
	safeOut(t, "sync's arrivals", out)
	if !strings.Contains(out, `+ \u001b[5mBlink\u202e (by Aimee)`) {
		t.Errorf("sync does not list the new item escaped:\n%s", out)
	}
	var lists []map[string]any
	if err := json.Unmarshal([]byte(j.ok("lists", "--json")), &lists); err != nil || len(lists) != 1 || lists[0]["name"] != evilList {
		t.Errorf("lists --json: %v %+v", err, lists)
	}
}
