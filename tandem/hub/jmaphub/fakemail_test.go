package jmaphub

import (
	"fmt"
	"slices"
	"strconv"
)

// fakeEmail is one email of the fake server's mail model.
type fakeEmail struct {
	mailboxes  map[string]bool
	channel    *string // raw header value, nil when absent
	ctype      string  // raw Content-Type, "" when absent
	value      string  // the decoded text body value
	encProblem bool    // report isEncodingProblem
	blob       string  // the raw message, served by download
	size       int     // the reported size; len(value) when 0
}

type fakeChange struct {
	state int
	id    string
	kind  string // "created", "updated", "destroyed"
}

// mailModel is a small in-memory JMAP mail store behind a fake: Email/get,
// /changes (paged by pageSize), /query (inMailbox, anchor paging), /set.
type mailModel struct {
	f        *fake
	emails   map[string]*fakeEmail
	order    []string // ids by creation
	log      []fakeChange
	state    int
	next     int
	pageSize int // Email/changes entries per answer
	// changesError, when set, is the error type every Email/changes answers.
	changesError string
	sets         []int // number of creates in each Email/set
}

// withMail installs a mail model on f.
func withMail(f *fake) *mailModel {
	m := &mailModel{f: f, emails: map[string]*fakeEmail{}, pageSize: 1000}
	f.on("Email/get", m.get)
	f.on("Email/changes", m.changes)
	f.on("Email/query", m.query)
	f.on("Email/set", m.set)
	return m
}

func (m *mailModel) record(id, kind string) {
	m.state++
	m.log = append(m.log, fakeChange{m.state, id, kind})
}

// add stores an email directly (as another client would) and returns its id.
func (m *mailModel) add(e *fakeEmail) string {
	m.f.mu.Lock()
	defer m.f.mu.Unlock()
	m.next++
	id := "e" + strconv.Itoa(m.next)
	if e.mailboxes == nil {
		e.mailboxes = map[string]bool{fakeMailbox: true}
	}
	m.emails[id] = e
	m.order = append(m.order, id)
	m.record(id, "created")
	return id
}

func (m *mailModel) move(id, mailbox string) {
	m.f.mu.Lock()
	defer m.f.mu.Unlock()
	m.emails[id].mailboxes = map[string]bool{mailbox: true}
	m.record(id, "updated")
}

func (m *mailModel) destroy(id string) {
	m.f.mu.Lock()
	defer m.f.mu.Unlock()
	delete(m.emails, id)
	m.order = slices.DeleteFunc(m.order, func(x string) bool { return x == id })
	m.record(id, "destroyed")
}

// The handlers run with f.mu not held.

func (m *mailModel) get(a map[string]any) (string, any) {
	m.f.mu.Lock()
	defer m.f.mu.Unlock()
	list := []map[string]any{}
	notFound := []string{}
	for _, id := range strs(a["ids"]) {
		e, ok := m.emails[id]
		if !ok {
			notFound = append(notFound, id)
			continue
		}
		size := e.size
		if size == 0 {
			size = len(e.value)
		}
		o := map[string]any{"id": id, "mailboxIds": e.mailboxes, "blobId": "b" + id, "size": size,
			"header:Tandem-Version:asRaw": " 1", "textBody": []map[string]any{{"partId": "1"}},
			"bodyValues": map[string]any{"1": map[string]any{"value": e.value, "isEncodingProblem": e.encProblem}}}
		if e.channel != nil {
			o["header:Tandem-Channel:asRaw"] = *e.channel
		}
		if e.ctype != "" {
			o["header:Content-Type:asRaw:all"] = []string{e.ctype}
		}
		m.f.blobs["b"+id] = e.blob
		list = append(list, o)
	}
	return "Email/get", map[string]any{"state": strconv.Itoa(m.state), "list": list, "notFound": notFound}
}

func (m *mailModel) changes(a map[string]any) (string, any) {
	m.f.mu.Lock()
	defer m.f.mu.Unlock()
	if m.changesError != "" {
		return "error", map[string]any{"type": m.changesError}
	}
	since, err := strconv.Atoi(fmt.Sprint(a["sinceState"]))
	if err != nil || since > m.state {
		return "error", map[string]any{"type": "invalidArguments"}
	}
	r := map[string]any{"oldState": strconv.Itoa(since), "created": []string{}, "updated": []string{}, "destroyed": []string{}}
	newState, n := since, 0
	for _, c := range m.log {
		if c.state <= since {
			continue
		}
		if n == m.pageSize {
			break
		}
		r[c.kind] = append(r[c.kind].([]string), c.id)
		newState, n = c.state, n+1
	}
	r["newState"] = strconv.Itoa(newState)
	r["hasMoreChanges"] = newState < m.state
	return "Email/changes", r
}

func (m *mailModel) query(a map[string]any) (string, any) {
	m.f.mu.Lock()
	defer m.f.mu.Unlock()
	filt, _ := a["filter"].(map[string]any)
	var ids []string
	for _, id := range m.order {
		if mb, ok := filt["inMailbox"].(string); !ok || m.emails[id].mailboxes[mb] {
			ids = append(ids, id)
		}
	}
	if anchor, ok := a["anchor"].(string); ok {
		i := slices.Index(ids, anchor)
		if i < 0 {
			return "error", map[string]any{"type": "anchorNotFound"}
		}
		off, _ := a["anchorOffset"].(float64)
		ids = ids[min(i+int(off), len(ids)):]
	}
	if lim, ok := a["limit"].(float64); ok && int(lim) < len(ids) {
		ids = ids[:int(lim)]
	}
	return "Email/query", map[string]any{"ids": ids}
}

func (m *mailModel) set(a map[string]any) (string, any) {
	created := map[string]any{}
	create, _ := a["create"].(map[string]any)
	for cid, v := range create {
		o := v.(map[string]any)
		ch := " " + fmt.Sprint(o["header:Tandem-Channel:asText"])
		bv := o["bodyValues"].(map[string]any)["1"].(map[string]any)["value"].(string)
		mbs := map[string]bool{}
		for k := range o["mailboxIds"].(map[string]any) {
			mbs[k] = true
		}
		id := m.add(&fakeEmail{mailboxes: mbs, channel: &ch, value: bv})
		created[cid] = map[string]any{"id": id}
	}
	for _, id := range strs(a["destroy"]) {
		m.destroy(id)
	}
	m.f.mu.Lock()
	defer m.f.mu.Unlock()
	if len(create) > 0 {
		m.sets = append(m.sets, len(create))
	}
	return "Email/set", map[string]any{"created": created, "destroyed": strs(a["destroy"])}
}

func (m *mailModel) setChangesError(typ string) {
	m.f.mu.Lock()
	defer m.f.mu.Unlock()
	m.changesError = typ
}
