package tandemcli_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestRequestIDsDovecot: two people who join through one link show two
// different request IDs, the same at every look (requests, members), and
// each approves by the ID shown. (Dovecot's message IDs begin with the
// same timestamp, so the start of tandem's ID was the same for both.) A
// name that looks like another after NFKC is ambiguous, and members tells
// the two apart by user ID.
func TestRequestIDsDovecot(t *testing.T) {
	a := aimeeOnDovecot(t, "House")
	var inv struct{ Link string }
	a.jsonOut(&inv, "share", "House", "--link")
	for i, name := range []string{"Jesper", "Carol", "\uff2aesper"} { // the last looks like Jesper (fullwidth J; NFKC makes it J)
		d := newDevice(t, fmt.Sprint("joiner", i))
		d.ok("init", "--name", name)
		d.ok("join", inv.Link)
	}
	ids := func(out string) map[string]string {
		m := map[string]string{}
		for _, l := range regexp.MustCompile(`(?m)^(\S+)  (\S+) wants to join House as writer \(ferry approve (\S+), or decline\)$`).FindAllStringSubmatch(out, -1) {
			if l[1] != l[3] {
				t.Errorf("the line's ID %s and the approve's %s differ", l[1], l[3])
			}
			m[l[2]] = l[1]
		}
		return m
	}
	first := ids(a.ok("requests"))
	if len(first) != 3 || first["Jesper"] == first["Carol"] || first["Jesper"] == first["\uff2aesper"] {
		t.Fatalf("three requests, IDs %v: want three different IDs", first)
	}
	wantErr(t, a.run("approve", "jesper"), 1, `"jesper" fits 2 requests: give the ID that ferry requests shows`)
	if again := ids(a.ok("requests")); again["Jesper"] != first["Jesper"] || again["Carol"] != first["Carol"] {
		t.Errorf("the IDs changed from %v to %v", first, again)
	}
	members := a.ok("members", "House")
	for name, id := range first {
		if !strings.Contains(members, name+" wants to join (ferry approve "+id+")") {
			t.Errorf("members shows another ID for %s than %s:\n%s", name, id, members)
		}
	}
	if out := a.ok("approve", first["Jesper"]); !strings.Contains(out, "Jesper can now use House.") {
		t.Errorf("approve %s: %s", first["Jesper"], out)
	}
	if out := a.ok("decline", first["Carol"]); !strings.Contains(out, "Declined Carol's request to join House.") {
		t.Errorf("decline %s: %s", first["Carol"], out)
	}
	a.ok("approve", first["\uff2aesper"])
	if out := a.ok("members", "House"); strings.Count(out, "writer (user ") != 2 {
		t.Errorf("members does not tell the two Jespers apart by user ID:\n%s", out)
	}
}

// aimeeOnDovecot is Aimee's device, connected to the Dovecot account
// (emptied), with a new list of hers.
func aimeeOnDovecot(t *testing.T, list string) *device {
	t.Helper()
	addr, user, pass := dovecotAccount(t)
	a := newDevice(t, "aimee")
	a.ok("init", "--name", "Aimee")
	a.okIn(pass+"\n", "connect", "imap", addr, "--user", user, "--security", "none", "--password-file", "-")
	a.ok("new", list)
	return a
}
