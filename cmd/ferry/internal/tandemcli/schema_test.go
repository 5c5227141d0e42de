package tandemcli_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// schema is the shape of a JSON value: for an object, each key's kind
// ("string", "number", "bool", "array", "object", "time|null", or a
// nested schema); for an array, the schema of its elements.
type schema map[string]any

// kindOf names v's JSON kind.
func kindOf(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case nil:
		return "null"
	}
	return "?"
}

// checkSchema checks that v has exactly the keys of s, with their kinds.
func checkSchema(t *testing.T, where string, v any, s schema) {
	t.Helper()
	obj, ok := v.(map[string]any)
	if !ok {
		t.Errorf("%s: %s, want an object", where, kindOf(v))
		return
	}
	for k, want := range s {
		got, ok := obj[k]
		if !ok {
			t.Errorf("%s: no key %q", where, k)
			continue
		}
		switch w := want.(type) {
		case string:
			if !slices.Contains(strings.Split(w, "|"), kindOf(got)) {
				t.Errorf("%s.%s: %s, want %s", where, k, kindOf(got), w)
			}
		case schema:
			checkSchema(t, where+"."+k, got, w)
		case []schema: // an array of objects
			arr, ok := got.([]any)
			if !ok {
				t.Errorf("%s.%s: %s, want an array", where, k, kindOf(got))
				continue
			}
			for i, e := range arr {
				checkSchema(t, where+"."+k+"["+string(rune('0'+i%10))+"]", e, w[0])
			}
		}
	}
	for k := range obj {
		if _, ok := s[k]; !ok {
			t.Errorf("%s: unexpected key %q", where, k)
		}
	}
}

var (
	listSchema  = schema{"id": "string", "name": "string", "names": "array", "state": "string", "removed": "bool", "role": "string", "items": "number"}
	valueSchema = schema{"value": "string", "author": "string", "user": "string"}
	fieldSchema = schema{"values": []schema{valueSchema}, "elements": "array", "conflict": "bool", "unsettleable": "bool"}
	itemSchema  = schema{"id": "string", "title": "string", "done": "bool", "tags": "array", "conflict": "bool", "deleted": "bool",
		"fields": schema{"title": fieldSchema}}
	reportSchema   = schema{"published": "number", "fetched": "number", "applied": "number", "rejected": "number", "held": "number"}
	identitySchema = schema{"profile": "string", "name": "string", "user": "string", "device": "string", "backup_key": "string"}
	statusSchema   = schema{"profile": "string", "name": "string", "hub": "string", "connection": "string", "last_sync": "string|null",
		"last_attempt": "string|null", "pending": "number", "held": "number", "lists": []schema{{"id": "string", "name": "string", "names": "array", "state": "string", "items": "number", "in_flight": "string"}}, "joins": "array"}
	changeSchema = schema{"time": "string", "list": "string", "list_id": "string", "item": "string", "item_id": "string", "what": "string", "field": "string", "value": "string", "by": "string"}
	errorSchema  = schema{"error": schema{"kind": "string", "message": "string"}, "exit": "number"}
)

// TestJSONSchema: every command that prints data prints, with --json, one
// JSON document of a fixed shape; errors are JSON on stderr.
func TestJSONSchema(t *testing.T) {
	addr, user, pass := dovecotAccount(t)
	a, b := newDevice(t, "a"), newDevice(t, "b")
	one := func(d *device, s schema, stdin string, args ...string) map[string]any {
		t.Helper()
		out := d.okIn(stdin, append(args, "--json")...)
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Fatalf("%v --json: not one JSON line: %v\n%s", args, err, out)
		}
		checkSchema(t, strings.Join(args, " "), v, s)
		return v
	}
	id := one(a, identitySchema, "", "init", "--name", "Aimee")
	pw := writeFile(t, "pw", pass)
	one(a, schema{"hub": "string", "kind": "string", "synced": "bool", "sync": reportSchema}, "", "connect", "imap", addr, "--user", user, "--security", "none", "--password-file", pw)
	l := one(a, listSchema, "", "new", "Groceries")
	withQty := schema{}
	for k, v := range itemSchema {
		withQty[k] = v
	}
	withQty["fields"] = schema{"title": fieldSchema, "qty": fieldSchema}
	one(a, withQty, "", "add", "Groceries", "Milk", "qty=1")
	one(a, withQty, "", "set", "Groceries", "Milk", "qty=2")
	withTags := schema{}
	for k, v := range withQty {
		withTags[k] = v
	}
	withTags["fields"] = schema{"title": fieldSchema, "qty": fieldSchema, "tags": fieldSchema}
	one(a, withTags, "", "tag", "Groceries", "Milk", "dairy")
	one(a, withTags, "", "untag", "Groceries", "Milk", "dairy")
	withDone := schema{}
	for k, v := range withTags {
		withDone[k] = v
	}
	withDone["fields"] = schema{"title": fieldSchema, "qty": fieldSchema, "tags": fieldSchema, "done": fieldSchema}
	one(a, withDone, "", "done", "Groceries", "Milk")
	one(a, withDone, "", "show", "Groceries", "Milk")
	one(a, itemSchema, "", "add", "Groceries", "Bread")
	one(a, schema{"id": "string", "title": "string", "done": "bool", "tags": "array", "conflict": "bool", "deleted": "bool", "fields": schema{}}, "", "rm", "Groceries", "Bread")
	one(a, listSchema, "", "rename", "Groceries", "Food")
	show := one(a, schema{"list": listSchema, "items": "array"}, "", "show", "Food")
	if n := len(show["items"].([]any)); n != 1 {
		t.Errorf("show: %d items, want 1", n)
	}
	out := a.ok("lists", "--json")
	var lists []map[string]any
	if err := json.Unmarshal([]byte(out), &lists); err != nil || len(lists) != 1 {
		t.Fatalf("lists --json: %v %s", err, out)
	}
	checkSchema(t, "lists", lists[0], listSchema)
	if lists[0]["id"] != l["id"] {
		t.Errorf("lists id %v, new id %v", lists[0]["id"], l["id"])
	}
	one(a, reportSchema, "", "sync")
	one(a, statusSchema, "", "status")
	key := one(a, schema{"backup_key": "string"}, "", "backup-key", "--yes")
	if key["backup_key"] != id["backup_key"] {
		t.Error("backup-key differs from the one init showed")
	}
	hq := one(a, schema{"hub": "string", "text": "string"}, "y\n", "hub", "qr")
	one(b, schema{"profile": "string", "name": "string", "user": "string", "device": "string"}, key["backup_key"].(string)+"\n", "restore", "--name", "Aimee", "--backup-key-file", "-")
	one(b, schema{"hub": "string", "kind": "string", "synced": "bool", "sync": reportSchema}, hq["text"].(string), "connect", "paste")

	// sync --watch --json: one JSON object a line.
	watch := exec.Command(ferryBin, "sync", "--watch", "--json")
	watch.Env = []string{"HOME=" + b.home, "FERRY_HOME=" + b.dir, "PATH=" + os.Getenv("PATH")}
	stdout, _ := watch.StdoutPipe()
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	waitLine(t, lines, `"what":"online"`)
	a.ok("add", "Food", "Coffee")
	a.ok("sync")
	var ch map[string]any
	for l := range lines {
		if strings.Contains(l, `"what":"added"`) {
			json.Unmarshal([]byte(l), &ch)
			break
		}
	}
	watch.Process.Signal(syscall.SIGINT)
	watch.Wait()
	checkSchema(t, "sync --watch", ch, changeSchema)

	// An error as JSON.
	r := a.run("show", "Nope", "--json")
	var e map[string]any
	if err := json.Unmarshal([]byte(r.err), &e); err != nil || r.code != 1 || r.out != "" {
		t.Fatalf("error --json: %v %+v", err, r)
	}
	checkSchema(t, "error", e, errorSchema)
}
