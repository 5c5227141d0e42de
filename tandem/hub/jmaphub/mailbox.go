package jmaphub

import (
	"context"
	"errors"
	"strconv"

	"github.com/ferry-sync/ferry/tandem/hub"
)

type mailboxInfo struct {
	ID       string  `json:"id"`
	Name     string  `json:"name"`
	ParentID *string `json:"parentId"`
}

type queryResp struct {
	IDs []string `json:"ids"`
	// Limit is set when the server used another limit than asked
	// (RFC 8620 §5.5).
	Limit *int `json:"limit"`
}

type resultRef struct {
	ResultOf string `json:"resultOf"`
	Name     string `json:"name"`
	Path     string `json:"path"`
}

// EnsureFolder finds the Tandem mailbox, creating it when there is none
// (§10.2). The rules: Mailbox/query with filter name "Tandem" matches
// substrings (RFC 8621 §2.3), so the binding takes the mailbox named exactly
// Tandem (bytes compared) with no parent, or failing that the one directly
// under the inbox. With neither, it creates Tandem at top level; if that
// fails (another client created it first, which servers report with
// different SetError types), it queries again and takes what it finds.
// Decision: docs/decisions/tandem-hub-jmap-mailbox.md.
func (st *Store) EnsureFolder(ctx context.Context) error {
	_, err := st.ensureMailbox(ctx)
	return err
}

// ensureMailbox returns the Tandem mailbox id, looking it up (and creating
// it) on first use.
func (st *Store) ensureMailbox(ctx context.Context) (string, error) {
	st.mu.Lock()
	id := st.mailbox
	st.mu.Unlock()
	if id != "" {
		return id, st.check()
	}
	id, err := st.findMailbox(ctx)
	if err == nil && id == "" {
		id, err = st.createMailbox(ctx)
	}
	if err != nil {
		return "", wrapOp("ensureFolder", err)
	}
	st.mu.Lock()
	st.mailbox = id
	st.mu.Unlock()
	return id, nil
}

// errMailboxGone means the cached Tandem mailbox is no longer the one
// §10.2 selects (another client destroyed, renamed or moved it).
var errMailboxGone = errors.New("jmaphub: the Tandem mailbox was destroyed")

// mailboxCheck is the §10.2 mailbox lookup (the calls of findMailbox),
// sent along with the first request of Changes and with every append, so
// that noticing a mailbox destroyed, renamed or moved by another client
// costs no extra round trip.
type mailboxCheck struct {
	named, inbox queryResp
	got          struct {
		List []mailboxInfo `json:"list"`
	}
}

// mailboxCheckCalls returns the lookup's calls, to be placed at index at
// of the request (the Mailbox/get refers back to the Mailbox/query).
func (st *Store) mailboxCheckCalls(at int, into *mailboxCheck) []call {
	acct := st.s.accountID
	return []call{
		{"Mailbox/query", map[string]any{"accountId": acct, "filter": map[string]any{"name": hub.Folder}}, &into.named},
		{"Mailbox/get", map[string]any{"accountId": acct, "properties": []string{"id", "name", "parentId"},
			"#ids": resultRef{strconv.Itoa(at), "Mailbox/query", "/ids"}}, &into.got},
		{"Mailbox/query", map[string]any{"accountId": acct, "filter": map[string]any{"role": "inbox"}}, &into.inbox},
	}
}

// gone reports whether the lookup answered, and selects another mailbox
// than mb (or none): mb was destroyed, renamed or moved, and is no longer
// the Tandem mailbox of §10.2.
func (c *mailboxCheck) gone(mb string) bool {
	if c.got.List == nil || c.inbox.IDs == nil {
		return false // not answered: the request's error says why
	}
	return pickMailbox(c.got.List, c.inbox.IDs) != mb
}

// forgetMailbox drops the cached mailbox id if it is still mb, so that the
// next ensureMailbox looks it up (and creates it) again.
func (st *Store) forgetMailbox(mb string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.mailbox == mb {
		st.mailbox = ""
	}
}

// findMailbox applies the lookup rules of §10.2; "" means there is none.
func (st *Store) findMailbox(ctx context.Context) (string, error) {
	var check mailboxCheck
	if err := st.request(ctx, st.mailboxCheckCalls(0, &check)...); err != nil {
		return "", err
	}
	return pickMailbox(check.got.List, check.inbox.IDs), nil
}

// pickMailbox is the choice of §10.2 among the mailboxes a name query
// returned: exactly "Tandem" at top level first, else exactly "Tandem"
// directly under an inbox.
func pickMailbox(list []mailboxInfo, inboxes []string) string {
	for _, m := range list {
		if m.Name == hub.Folder && m.ParentID == nil && m.ID != "" {
			return m.ID
		}
	}
	for _, m := range list {
		if m.Name != hub.Folder || m.ParentID == nil || m.ID == "" {
			continue
		}
		for _, in := range inboxes {
			if *m.ParentID == in {
				return m.ID
			}
		}
	}
	return ""
}

// createMailbox creates Tandem at top level; on any failure to create it
// queries again (sibling names are unique, RFC 8621 §2).
func (st *Store) createMailbox(ctx context.Context) (string, error) {
	var set setResp
	err := st.request(ctx, call{"Mailbox/set", map[string]any{
		"accountId": st.s.accountID,
		"create":    map[string]any{"tandem": map[string]any{"name": hub.Folder, "parentId": nil}},
	}, &set})
	if err != nil {
		return "", err
	}
	if c, ok := set.Created["tandem"]; ok && c.ID != "" {
		return c.ID, nil
	}
	id, err := st.findMailbox(ctx)
	if err != nil {
		return "", err
	}
	if id != "" {
		return id, nil
	}
	if e, ok := set.NotCreated["tandem"]; ok {
		return "", &SetError{Method: "Mailbox/set", ID: "tandem", Type: e.Type, Description: e.Description}
	}
	return "", badResponse("Mailbox/set", "mailbox neither created nor refused")
}

// setResp is the part of a /set response (RFC 8620 §5.3) the binding reads.
type setResp struct {
	NewState     string                 `json:"newState"`
	Created      map[string]createdInfo `json:"created"`
	NotCreated   map[string]setErr      `json:"notCreated"`
	Destroyed    []string               `json:"destroyed"`
	NotDestroyed map[string]setErr      `json:"notDestroyed"`
}

type createdInfo struct {
	ID string `json:"id"`
}

type setErr struct {
	Type        string `json:"type"`
	Description string `json:"description"`
	// ExistingID is the email an alreadyExists refers to (RFC 8620 §5.4).
	ExistingID string `json:"existingId"`
}
