package hub_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/hubtest"
	"github.com/ferry-sync/ferry/tandem/hub/memhub"
)

// lossy lands appends but loses their answers while lose is set, and fails
// Changes while failChanges is set.
type lossy struct {
	hub.Store
	lose, failChanges bool
	appends           int
}

var errLost = errors.New("connection reset before the answer")

func (l *lossy) Append(ctx context.Context, ch string, env []byte) (hub.ID, error) {
	l.appends++
	id, err := l.Store.Append(ctx, ch, env)
	if err == nil && l.lose {
		return "", errLost
	}
	return id, err
}

func (l *lossy) Changes(ctx context.Context, c hub.Cursor) (hub.Changes, error) {
	if l.failChanges {
		return hub.Changes{}, errLost
	}
	return l.Store.Changes(ctx, c)
}

func TestPublishAfterLostAnswer(t *testing.T) {
	srv := memhub.NewServer()
	st := &lossy{Store: srv.Open(), lose: true}
	ctx := t.Context()
	st.EnsureFolder(ctx)
	p := hub.NewPublisher(st)
	env := hubtest.Envelope(90)
	if _, err := p.Publish(ctx, hubtest.Channel(1), env); !errors.Is(err, errLost) {
		t.Fatalf("first Publish: %v, want the lost answer", err)
	}
	st.lose = false
	id, err := p.Publish(ctx, hubtest.Channel(1), env)
	if err != nil {
		t.Fatal(err)
	}
	if st.appends != 1 {
		t.Fatalf("%d appends; the retry appended the envelope again", st.appends)
	}
	c, _ := srv.Open().Changes(ctx, nil)
	if len(c.Added) != 1 || c.Added[0].ID != id {
		t.Fatalf("hub holds %+v, want only %s", c.Added, id)
	}
}

func TestPublishDoesNotAppendBlind(t *testing.T) {
	srv := memhub.NewServer()
	st := &lossy{Store: srv.Open(), failChanges: true}
	st.EnsureFolder(t.Context())
	p := hub.NewPublisher(st)
	if _, err := p.Publish(t.Context(), hubtest.Channel(1), hubtest.Envelope(90)); err == nil {
		t.Fatal("Publish succeeded without looking at the hub")
	}
	if st.appends != 0 {
		t.Fatal("Publish appended without knowing whether the hub holds the envelope")
	}
	if _, err := p.Publish(t.Context(), "NOT A TAG", hubtest.Envelope(90)); !errors.Is(err, hub.ErrBadChannel) {
		t.Fatalf("bad tag: %v", err)
	}
}

func TestPublishSeesDestroyed(t *testing.T) {
	srv := memhub.NewServer()
	st := srv.Open()
	ctx := t.Context()
	st.EnsureFolder(ctx)
	p := hub.NewPublisher(st)
	env := hubtest.Envelope(90)
	id, err := p.Publish(ctx, hubtest.Channel(1), env)
	if err != nil {
		t.Fatal(err)
	}
	st.Destroy(ctx, []hub.ID{id})
	id2, err := p.Publish(ctx, hubtest.Channel(1), env)
	if err != nil || id2 == id {
		t.Fatalf("republish after destroy: %s, %v; want a new message", id2, err)
	}
}
