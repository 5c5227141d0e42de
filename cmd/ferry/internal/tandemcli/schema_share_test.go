package tandemcli_test

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// decodeLine decodes one JSON line and checks it against s.
func decodeLine(t *testing.T, where, line string, s schema) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(line), &v); err != nil {
		t.Fatalf("%s: not JSON: %v\n%s", where, err, line)
	}
	checkSchema(t, where, v, s)
	return v
}

var (
	requestSchema    = schema{"id": "string", "list": "string", "list_name": "string", "name": "string", "user": "string", "role": "string", "previously_removed": "bool"}
	membershipSchema = schema{"list": "string", "name": "string", "owner": "string", "state": "string", "message": "string"}
	inviteSchema     = schema{"list": "string", "role": "string", "link": "string", "payload": "string", "expires": "string", "approve": "bool"}
)

// TestJSONSchemaSharing: --json of device add/join, share, join,
// requests, approve, decline, members, leave and copy.
func TestJSONSchemaSharing(t *testing.T) {
	addr, user, pass := dovecotAccount(t)
	a1, a2, b := newDevice(t, "a1"), newDevice(t, "a2"), newDevice(t, "b")
	a1.ok("init", "--name", "Aimee")
	a1.okIn(pass, "connect", "imap", addr, "--user", user, "--security", "none", "--password-file", "-")
	a1.ok("new", "House")

	add := a1.start("device", "add", "--json", "--yes")
	offer := decodeLine(t, "device add", add.line(`^\{"expires".*`)[0], schema{"payload": "string", "expires": "string"})
	join := a2.start("device", "join", offer["payload"].(string), "--name", "Aimee", "--json")
	code := decodeLine(t, "device join", join.line(`^\{"code".*`)[0], schema{"code": "string", "expires": "string"})
	add.prompt(`Code ` + code["code"].(string)[:3] + ` ` + code["code"].(string)[3:])
	io.WriteString(add.stdin, "y\n")
	decodeLine(t, "device add (added)", add.line(`^\{"added".*`)[0], schema{"added": "string", "code": "string"})
	add.wait()
	decodeLine(t, "device join (added)", join.line(`^\{"device".*`)[0], schema{"profile": "string", "name": "string", "user": "string", "device": "string", "hub": "string", "sync": reportSchema})
	join.wait()

	one := func(d *device, s schema, args ...string) map[string]any {
		t.Helper()
		out := strings.TrimSpace(d.ok(append(args, "--json")...))
		if strings.Contains(out, "\n") {
			t.Fatalf("%v: more than one line:\n%s", args, out)
		}
		return decodeLine(t, strings.Join(args, " "), out, s)
	}
	b.ok("init", "--name", "Jesper")
	inv := one(a1, inviteSchema, "share", "House", "--link")
	if m := one(b, membershipSchema, "join", inv["link"].(string)); m["state"] != "waiting" {
		t.Errorf("join: %v", m)
	}
	out := a2.ok("requests", "--json")
	var rs []map[string]any
	if err := json.Unmarshal([]byte(out), &rs); err != nil || len(rs) != 1 {
		t.Fatalf("requests --json: %v\n%s", err, out)
	}
	checkSchema(t, "requests", rs[0], requestSchema)
	one(a2, requestSchema, "approve", rs[0]["id"].(string)[:6])
	b.ok("sync")
	members := one(a1, schema{"list": listSchema, "members": []schema{{"name": "string", "user": "string", "role": "string", "you": "bool", "left": "bool"}},
		"invites": []schema{{"role": "string", "auto_approve": "bool", "max_uses": "number", "expires": "string"}}, "requests": "array"}, "members", "House")
	if n := len(members["members"].([]any)); n != 2 {
		t.Errorf("%d members, want 2", n)
	}
	memberSchema := schema{"name": "string", "user": "string", "role": "string", "you": "bool", "left": "bool"}
	one(a1, memberSchema, "role", "House", "Jesper", "reader")
	one(a1, memberSchema, "role", "House", "Jesper", "writer")
	one(b, schema{"list": "string", "name": "string", "synced": "bool"}, "leave", "House", "--yes")

	c := newDevice(t, "c")
	c.ok("init", "--name", "Carol")
	inv = one(a1, inviteSchema, "share", "House", "--link")
	c.ok("join", inv["link"].(string))
	one(a1, requestSchema, "decline", "carol")

	// share by QR: the invite line, then one line when they have joined.
	share := a1.start("share", "House", "--json")
	qr := decodeLine(t, "share", share.line(`^\{.*`)[0], inviteSchema)
	d := newDevice(t, "d")
	d.ok("init", "--name", "Dan")
	d.ok("join", qr["payload"].(string))
	decodeLine(t, "share (joined)", share.line(`.*"joined".*`)[0], schema{"joined": "string", "user": "string", "role": "string"})
	share.wait()

	one(a1, memberSchema, "remove", "House", "Dan", "--yes")
	changed := schema{"list": "string", "name": "string", "done": "string"}
	one(a1, changed, "new-key", "House")
	one(a1, changed, "make-private", "House", "--yes")
	one(a1, schema{"list": listSchema, "from": "string", "conflicts_resolved": "number"}, "copy", "House")
	one(a1, schema{"list": "string", "name": "string", "deleted": "bool"}, "delete", "House", "--yes")
	so := one(a1, schema{"identity": identitySchema, "copies": []schema{{"from": "string", "to": "string", "name": "string", "records": "number"}},
		"ask_again": "array", "old": "string"}, "start-over", "--yes")
	if n := len(so["copies"].([]any)); n != 1 { // House (copy); House itself is deleted
		t.Errorf("start-over copied %d lists, want 1: %v", n, so)
	}
}
