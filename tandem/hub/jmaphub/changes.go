package jmaphub

import (
	"context"
	"errors"
	"slices"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// maxChangePages bounds the Email/changes loop: a server that keeps
// answering hasMoreChanges without progress is a bad server.
const maxChangePages = 100000

// emailChangesResp is an Email/changes response (RFC 8620 §5.2).
type emailChangesResp struct {
	OldState       string   `json:"oldState"`
	NewState       string   `json:"newState"`
	HasMoreChanges bool     `json:"hasMoreChanges"`
	Created        []string `json:"created"`
	Updated        []string `json:"updated"`
	Destroyed      []string `json:"destroyed"`
}

// emailMeta is what changes reads of an Email: where it is and its channel.
type emailMeta struct {
	ID         string          `json:"id"`
	MailboxIDs map[string]bool `json:"mailboxIds"`
	Channel    *string         `json:"header:Tandem-Channel:asRaw"`
	Size       int64           `json:"size"`
}

var metaProperties = []string{"id", "mailboxIds", "header:Tandem-Channel:asRaw", "size"}

// Changes reports what changed in the Tandem mailbox since the cursor
// (§10.2 changes): Email/changes since the cursor's state, repeated while
// hasMoreChanges, then Email/get of the created and updated ids. An id in
// the Tandem mailbox and not yet known is added; a known id no longer in it
// (moved out: an update, not a destroy) or destroyed is removed. A
// cursor of another server, account or mailbox, and a mailbox another
// client destroyed, renamed or moved (checked in the same request), mean a
// full resync from nothing (hub.Changes.Reset); a nil cursor, or an
// Email/changes answered with cannotCalculateChanges or invalidArguments,
// means a full resync
// (Email/query with inMailbox, paged). The caller's cursor is never changed;
// on an error it stays good for a retry.
func (st *Store) Changes(ctx context.Context, since hub.Cursor) (hub.Changes, error) {
	cur, err := decodeCursor(since)
	if err != nil {
		return hub.Changes{}, err
	}
	mb, err := st.ensureMailbox(ctx)
	if err != nil {
		return hub.Changes{}, err
	}
	ch, err := st.changesIn(ctx, mb, cur)
	if errors.Is(err, errMailboxGone) {
		// Another client destroyed, renamed or moved the Tandem mailbox:
		// find or make the one §10.2 selects now, and resync against it
		// from nothing (a Reset, as the IMAP binding answers for a folder
		// made again), even if the server gave it the old id.
		st.log.Debug("jmaphub: Tandem mailbox gone", "mailbox", mb)
		st.forgetMailbox(mb)
		if mb, err = st.ensureMailbox(ctx); err != nil {
			return hub.Changes{}, err
		}
		ch, err = st.resync(ctx, mb, &cursor{V: cursorVersion}, append([]string{}, cur.Known...))
	}
	return ch, err
}

// changesIn runs Changes against mailbox mb.
func (st *Store) changesIn(ctx context.Context, mb string, cur *cursor) (hub.Changes, error) {
	if cur.State == "" || cur.Server != st.s.server() || cur.Account != st.s.accountID || cur.Mailbox != mb {
		// Not this mailbox's cursor (or none): from nothing.
		return st.resync(ctx, mb, &cursor{V: cursorVersion}, cur.Known)
	}
	ch, err := st.incremental(ctx, mb, cur)
	var me *MethodError
	if errors.As(err, &me) && me.Method == "Email/changes" &&
		(me.Type == "cannotCalculateChanges" || me.Type == "invalidArguments") {
		st.log.Debug("jmaphub: full resync", "reason", me.Type)
		return st.resync(ctx, mb, cur, nil)
	}
	return ch, wrapOp("changes", err)
}

// incremental is the Email/changes path.
func (st *Store) incremental(ctx context.Context, mb string, cur *cursor) (hub.Changes, error) {
	state := cur.State
	var touched, destroyed []string
	for page := 0; ; page++ {
		if page == maxChangePages {
			return hub.Changes{}, badResponse("Email/changes", "hasMoreChanges after %d pages", page)
		}
		var r emailChangesResp
		calls := []call{{"Email/changes", map[string]any{"accountId": st.s.accountID, "sinceState": state}, &r}}
		var check mailboxCheck
		if page == 0 {
			calls = append(calls, st.mailboxCheckCalls(len(calls), &check)...)
		}
		err := st.request(ctx, calls...)
		if check.gone(mb) { // decoded even when Email/changes failed
			return hub.Changes{}, errMailboxGone
		}
		if err != nil {
			return hub.Changes{}, err
		}
		if r.NewState == "" {
			return hub.Changes{}, badResponse("Email/changes", "no newState")
		}
		if r.HasMoreChanges && r.NewState == state {
			return hub.Changes{}, badResponse("Email/changes", "hasMoreChanges without a new state")
		}
		touched = append(append(touched, r.Created...), r.Updated...)
		destroyed = append(destroyed, r.Destroyed...)
		state = r.NewState
		if !r.HasMoreChanges {
			break
		}
	}
	known := cur.knownSet()
	gone := make(map[string]bool, len(destroyed))
	var out hub.Changes
	for _, id := range destroyed {
		gone[id] = true
		if known[id] {
			delete(known, id)
			out.Removed = append(out.Removed, hub.ID(id))
		}
	}
	touched = slices.DeleteFunc(slices.Compact(sorted(touched)), func(id string) bool { return gone[id] })
	metas, notFound, err := st.getMeta(ctx, touched)
	if err != nil {
		return hub.Changes{}, err
	}
	for _, m := range metas {
		in := m.MailboxIDs[mb]
		switch {
		case in && !known[m.ID]:
			if ch, ok := m.channel(); ok {
				known[m.ID] = true
				out.Added = append(out.Added, hub.Added{ID: hub.ID(m.ID), Channel: ch, Size: max(m.Size, 0)})
			}
		case !in && known[m.ID]:
			delete(known, m.ID)
			out.Removed = append(out.Removed, hub.ID(m.ID))
		}
	}
	for _, id := range notFound {
		if known[id] {
			delete(known, id)
			out.Removed = append(out.Removed, hub.ID(id))
		}
	}
	next := &cursor{V: cursorVersion, Server: st.s.server(), Account: st.s.accountID, Mailbox: mb, State: state, Known: keys(known)}
	out.Cursor = next.encode()
	return out, nil
}

// getMeta runs Email/get for ids in batches of maxObjectsInGet.
func (st *Store) getMeta(ctx context.Context, ids []string) ([]emailMeta, []string, error) {
	var metas []emailMeta
	var notFound []string
	for _, b := range batches(len(ids), st.s.maxObjectsInGet) {
		var r struct {
			List     []emailMeta `json:"list"`
			NotFound []string    `json:"notFound"`
		}
		err := st.request(ctx, call{"Email/get", map[string]any{
			"accountId": st.s.accountID, "ids": ids[b[0]:b[1]], "properties": metaProperties,
		}, &r})
		if err != nil {
			return nil, nil, err
		}
		for _, m := range r.List {
			if m.ID == "" {
				return nil, nil, badResponse("Email/get", "email without id")
			}
		}
		metas = append(metas, r.List...)
		notFound = append(notFound, r.NotFound...)
	}
	return metas, notFound, nil
}

// unfoldTrim reads a raw header value as §10.4 says: unfolded (CRLF before
// white space removed) and trimmed, using the same parser an IMAP reader
// uses, so both bindings read a header byte for byte alike. The value is
// read with :asRaw rather than :asText because asText also decodes RFC 2047
// encoded words, which an IMAP reader does not (decision:
// docs/decisions/tandem-hub-jmap-reading.md).
func unfoldTrim(raw string) (string, bool) {
	h, err := hub.ParseHeader([]byte("X:" + raw + "\r\n"))
	if err != nil {
		return "", false
	}
	v := h.Get("X")
	return v, v != ""
}

// channel returns the message's channel tag; false when it has no
// Tandem-Channel header (not a Tandem message: left out of Added).
func (m *emailMeta) channel() (string, bool) {
	if m.Channel == nil {
		return "", false
	}
	return unfoldTrim(*m.Channel)
}

func sorted(s []string) []string { slices.Sort(s); return s }

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
