// Package memhub is an in-memory Tandem hub (§10.1), for fast tests of
// everything above the store. A [Server] is one account's mailbox with any
// number of folders; each [Store] opened on it is one client connection.
//
// It behaves like a mail server where it matters to the protocol: messages
// are stored as raw RFC 5322 bytes (built by hub.Build, or injected as a
// server might have re-encoded them) and read back with the §10.4 reader; a
// message moved between folders gets a new id, as an IMAP UID does; and
// Changes reports moves into and out of the Tandem folder.
package memhub

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// Server is one in-memory account. Its methods are safe for concurrent use.
type Server struct {
	mu      sync.Mutex
	epoch   uint64 // tells cursors of different servers apart
	nextID  uint64
	folders map[string]map[hub.ID][]byte // folder → id → raw message
	where   map[hub.ID]string            // id → folder
	log     []event                      // changes of the Tandem folder
	changed chan struct{}                // closed and replaced on every change
}

// event is one entry of the Tandem folder's history.
type event struct {
	id      hub.ID
	channel string
	removed bool
}

// NewServer returns an empty account.
func NewServer() *Server {
	return &Server{
		epoch:   uint64(time.Now().UnixNano()),
		folders: map[string]map[hub.ID][]byte{},
		where:   map[hub.ID]string{},
		changed: make(chan struct{}),
	}
}

// Open returns a new connection to the account.
func (s *Server) Open() *Store { return &Store{srv: s, closed: make(chan struct{})} }

// Connect is Open in the form tandem.Options.Store takes: an app (or an
// Example) passes srv.Connect to reach this account.
func (s *Server) Connect(context.Context) (hub.Store, error) { return s.Open(), nil }

// Inject stores raw, a complete RFC 5322 message, in folder as a server or
// another client might have stored it (any charset or transfer encoding),
// and returns its id.
func (s *Server) Inject(folder string, raw []byte) hub.ID {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.add(folder, append([]byte(nil), raw...))
}

// Move moves message id into folder, where it gets a new id, which Move
// returns. It fails with hub.ErrNotFound if id is not in any folder.
func (s *Server) Move(id hub.ID, folder string) (hub.ID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	from, ok := s.where[id]
	if !ok {
		return "", fmt.Errorf("memhub: move %s: %w", id, hub.ErrNotFound)
	}
	raw := s.folders[from][id]
	s.remove(id)
	return s.add(folder, raw), nil
}

func (s *Server) add(folder string, raw []byte) hub.ID {
	s.nextID++
	id := hub.ID(strconv.FormatUint(s.nextID, 10))
	if s.folders[folder] == nil {
		s.folders[folder] = map[hub.ID][]byte{}
	}
	s.folders[folder][id] = raw
	s.where[id] = folder
	if folder == hub.Folder {
		s.record(event{id: id, channel: channelOf(raw)})
	}
	return id
}

func (s *Server) remove(id hub.ID) {
	folder := s.where[id]
	delete(s.folders[folder], id)
	delete(s.where, id)
	if folder == hub.Folder {
		s.record(event{id: id, removed: true})
	}
}

func (s *Server) record(e event) {
	s.log = append(s.log, e)
	close(s.changed)
	s.changed = make(chan struct{})
}

// channelOf reads the Tandem-Channel header as Changes would.
func channelOf(raw []byte) string {
	hb, _ := hub.SplitMessage(raw)
	h, err := hub.ParseHeader(hb)
	if err != nil {
		return ""
	}
	return h.Get(hub.HeaderChannel)
}

// Store is one connection to a Server. It implements hub.Store.
type Store struct {
	srv       *Server
	closeOnce sync.Once
	closed    chan struct{}
}

var _ hub.Store = (*Store)(nil)

func (c *Store) check(ctx context.Context) error {
	select {
	case <-c.closed:
		return hub.ErrClosed
	default:
	}
	return ctx.Err()
}

// EnsureFolder implements hub.Store.
func (c *Store) EnsureFolder(ctx context.Context) error {
	if err := c.check(ctx); err != nil {
		return err
	}
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	if c.srv.folders[hub.Folder] == nil {
		c.srv.folders[hub.Folder] = map[hub.ID][]byte{}
	}
	return nil
}

// Append implements hub.Store.
func (c *Store) Append(ctx context.Context, channel string, envelope []byte) (hub.ID, error) {
	if err := c.check(ctx); err != nil {
		return "", err
	}
	raw, err := hub.Build(channel, envelope, time.Now())
	if err != nil {
		return "", err
	}
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	if c.srv.folders[hub.Folder] == nil {
		return "", fmt.Errorf("memhub: append: folder %s does not exist", hub.Folder)
	}
	return c.srv.add(hub.Folder, raw), nil
}

// Cursor layout: "mem1" || u64 server epoch || u64 log position. The
// epoch names the server: a cursor of another server is a full resync from
// nothing (hub.Changes.Reset), as in the other bindings
// (docs/decisions/tandem-hub-cursor-identity.md); memhub's cursor does not
// list the ids it knew, so that Reset removes none.
const cursorMagic = "mem1"

// errForeign is a well-formed cursor of another server.
var errForeign = errors.New("memhub: cursor of another server")

func (c *Store) decodeCursor(cur hub.Cursor) (int, error) {
	if cur == nil {
		return 0, nil
	}
	if len(cur) != 20 || string(cur[:4]) != cursorMagic {
		return 0, fmt.Errorf("memhub: %w", hub.ErrBadCursor)
	}
	if binary.BigEndian.Uint64(cur[4:12]) != c.srv.epoch {
		return 0, errForeign
	}
	pos := binary.BigEndian.Uint64(cur[12:])
	if pos > uint64(len(c.srv.log)) {
		return 0, fmt.Errorf("memhub: %w: position beyond the history", hub.ErrBadCursor)
	}
	return int(pos), nil
}

// Changes implements hub.Store.
func (c *Store) Changes(ctx context.Context, since hub.Cursor) (hub.Changes, error) {
	if err := c.check(ctx); err != nil {
		return hub.Changes{}, err
	}
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	pos, err := c.decodeCursor(since)
	var out hub.Changes
	if errors.Is(err, errForeign) {
		pos, err, out.Reset = 0, nil, true
	}
	if err != nil {
		return hub.Changes{}, err
	}
	added := map[hub.ID]int{} // id → index in out.Added
	for _, e := range c.srv.log[pos:] {
		switch {
		case !e.removed && e.channel != "":
			added[e.id] = len(out.Added)
			out.Added = append(out.Added, hub.Added{ID: e.id, Channel: e.channel, Size: int64(len(c.srv.folders[hub.Folder][e.id]))})
		case !e.removed:
			// not a Tandem message: never reported
		default:
			if i, ok := added[e.id]; ok {
				out.Added[i].ID = "" // added and removed since the cursor
			} else if !c.wasForeign(e.id, pos) {
				out.Removed = append(out.Removed, e.id)
			}
		}
	}
	out.Added = compact(out.Added)
	cur := make([]byte, 20)
	copy(cur, cursorMagic)
	binary.BigEndian.PutUint64(cur[4:], c.srv.epoch)
	binary.BigEndian.PutUint64(cur[12:], uint64(len(c.srv.log)))
	out.Cursor = cur
	return out, nil
}

// wasForeign reports whether id was added before pos without a channel
// header, so it was never reported as added.
func (c *Store) wasForeign(id hub.ID, pos int) bool {
	for _, e := range c.srv.log[:pos] {
		if e.id == id && !e.removed {
			return e.channel == ""
		}
	}
	return false
}

func compact(a []hub.Added) []hub.Added {
	out := a[:0]
	for _, x := range a {
		if x.ID != "" {
			out = append(out, x)
		}
	}
	return out
}

// Fetch implements hub.Store.
func (c *Store) Fetch(ctx context.Context, ids []hub.ID) ([]hub.Body, error) {
	if err := c.check(ctx); err != nil {
		return nil, err
	}
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	out := make([]hub.Body, len(ids))
	for i, id := range ids {
		out[i].ID = id
		raw, ok := c.srv.folders[hub.Folder][id]
		if !ok {
			out[i].Err = fmt.Errorf("memhub: fetch %s: %w", id, hub.ErrNotFound)
			continue
		}
		m, err := hub.ParseMessage(raw)
		out[i].Channel, out[i].Envelope, out[i].Err = m.Channel, m.Envelope, err
	}
	return out, nil
}

// Destroy implements hub.Store.
func (c *Store) Destroy(ctx context.Context, ids []hub.ID) error {
	if err := c.check(ctx); err != nil {
		return err
	}
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	for _, id := range ids {
		if c.srv.where[id] == hub.Folder {
			c.srv.remove(id)
		}
	}
	return nil
}

// Watch implements hub.Store: onChange runs after every change of the
// Tandem folder.
func (c *Store) Watch(ctx context.Context, onChange func()) error {
	if err := c.check(ctx); err != nil {
		return err
	}
	c.srv.mu.Lock()
	next := c.srv.changed
	c.srv.mu.Unlock()
	onChange() // listening
	for {
		select {
		case <-next:
			c.srv.mu.Lock()
			next = c.srv.changed // taken before onChange: nothing is missed
			c.srv.mu.Unlock()
			onChange()
		case <-ctx.Done():
			return ctx.Err()
		case <-c.closed:
			return hub.ErrClosed
		}
	}
}

// Close implements hub.Store.
func (c *Store) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}
