package jmaphub

import (
	"context"
	"errors"
	"strconv"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// resyncPage is the Email/query page size of a full resync (further capped
// by maxObjectsInGet, since each page is fetched in the same request). Only
// ids and headers travel, so pages can be large.
const resyncPage = 4096

// resyncAttempts bounds restarts of a full resync whose paging anchor was
// destroyed meanwhile.
const resyncAttempts = 3

// resync is the full resync of §10.2: the state first (Email/get with no
// ids), then every email in the Tandem mailbox by Email/query with
// inMailbox, paged by anchor so that concurrent removals shift nothing, each
// page's mailboxIds and channel read by a back-referenced Email/get in the
// same request. Changes after the state are replayed by the next
// Email/changes, which the known set makes idempotent. void, when not nil,
// are the ids of a cursor that did not count this mailbox: the result is a
// hub.Changes.Reset that removes them all and adds everything present.
func (st *Store) resync(ctx context.Context, mb string, cur *cursor, void []string) (hub.Changes, error) {
	var err error
	for range resyncAttempts {
		var ch hub.Changes
		ch, err = st.resyncOnce(ctx, mb, cur)
		if err == nil && void != nil {
			ch.Reset = true
			ch.Removed = make([]hub.ID, len(void))
			for i, id := range void {
				ch.Removed[i] = hub.ID(id)
			}
		}
		var me *MethodError
		if errors.As(err, &me) && me.Type == "anchorNotFound" {
			continue
		}
		return ch, wrapOp("changes (full resync)", err)
	}
	return hub.Changes{}, wrapOp("changes (full resync)", err)
}

func (st *Store) resyncOnce(ctx context.Context, mb string, cur *cursor) (hub.Changes, error) {
	acct := st.s.accountID
	var stateResp struct {
		State string `json:"state"`
	}
	present := make(map[string]hub.Added) // id -> channel and size
	var order []string                    // present ids in query order
	seen := make(map[string]bool)         // every id a page listed
	anchor := ""
	limit := min(resyncPage, st.s.maxObjectsInGet)
	for first := true; ; first = false {
		q := map[string]any{
			"accountId": acct,
			"filter":    map[string]any{"inMailbox": mb},
			"sort":      []map[string]any{{"property": "receivedAt", "isAscending": true}},
			"limit":     limit,
		}
		if anchor != "" {
			q["anchor"], q["anchorOffset"] = anchor, 1
		}
		var calls []call
		var check mailboxCheck
		if first { // the state comes before the first page
			calls = append(calls, st.mailboxCheckCalls(0, &check)...)
			calls = append(calls, call{"Email/get", map[string]any{"accountId": acct, "ids": []string{}}, &stateResp})
		}
		var qr queryResp
		var gr struct {
			List []emailMeta `json:"list"`
		}
		ref := resultRef{ResultOf: strconv.Itoa(len(calls)), Name: "Email/query", Path: "/ids"}
		calls = append(calls,
			call{"Email/query", q, &qr},
			call{"Email/get", map[string]any{"accountId": acct, "properties": metaProperties, "#ids": ref}, &gr})
		err := st.request(ctx, calls...)
		if check.gone(mb) { // decoded even when Email/query failed
			return hub.Changes{}, errMailboxGone
		}
		if err != nil {
			return hub.Changes{}, err
		}
		if first && stateResp.State == "" {
			return hub.Changes{}, badResponse("Email/get", "no state")
		}
		for _, m := range gr.List {
			if _, dup := present[m.ID]; dup {
				continue
			}
			if ch, ok := m.channel(); ok && m.MailboxIDs[mb] {
				present[m.ID] = hub.Added{ID: hub.ID(m.ID), Channel: ch, Size: max(m.Size, 0)}
				order = append(order, m.ID)
			}
		}
		progress := false
		for _, id := range qr.IDs {
			if !seen[id] {
				seen[id], progress = true, true
			}
		}
		if len(qr.IDs) > 0 && !progress {
			return hub.Changes{}, badResponse("Email/query", "a page after anchor %q lists no new id", anchor)
		}
		pageLimit := limit
		if qr.Limit != nil && *qr.Limit > 0 {
			pageLimit = min(pageLimit, *qr.Limit) // the server's own cap
		}
		if len(qr.IDs) == 0 || len(qr.IDs) < pageLimit {
			break
		}
		anchor = qr.IDs[len(qr.IDs)-1]
	}
	return diffKnown(cur, present, order, st.s.server(), acct, mb, stateResp.State), nil
}

// diffKnown turns the set of messages present in the mailbox into changes
// against the cursor's known ids.
func diffKnown(cur *cursor, present map[string]hub.Added, order []string, server, acct, mb, state string) hub.Changes {
	known := cur.knownSet()
	var out hub.Changes
	for _, id := range cur.Known {
		if _, ok := present[id]; !ok {
			out.Removed = append(out.Removed, hub.ID(id))
		}
	}
	for _, id := range order {
		if !known[id] {
			out.Added = append(out.Added, present[id])
		}
	}
	next := &cursor{V: cursorVersion, Server: server, Account: acct, Mailbox: mb, State: state, Known: keys(present)}
	out.Cursor = next.encode()
	return out
}
