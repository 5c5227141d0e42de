package relay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// fanout carries broadcasts between the relay processes of one Postgres
// database: a process stores each Broadcast frame in evolu_broadcast and
// NOTIFYs its id on channel evolu_broadcast:<schema>; every process LISTENs and sends
// the frames of the others to its own subscribers. Frames older than a
// minute are deleted. A broadcast missed while the listening connection is
// down costs nothing but latency: clients reconcile on their next sync
// (docs/decisions/evolu-relay-postgres.md).
type fanout struct {
	s      *Server
	dsn    string
	origin string // this process's id in the notifications
	// channel is the NOTIFY channel: one per schema, so that relays of
	// other deployments in the same database (another search_path) do not
	// hear these broadcasts.
	channel string
	cancel  context.CancelFunc
	done    chan struct{}

	mu        sync.Mutex
	lastPurge time.Time
}

func startFanout(ctx context.Context, s *Server) (*fanout, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f := &fanout{s: s, dsn: s.cfg.DBPath, origin: hex.EncodeToString(b[:]), cancel: cancel, done: make(chan struct{})}
	var schema string
	if err := s.store.DB().QueryRowContext(ctx, `select current_schema()`).Scan(&schema); err != nil {
		cancel()
		return nil, fmt.Errorf("relay: postgres: %w", err)
	}
	f.channel = "evolu_broadcast:" + schema
	conn, err := f.listen(ctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("relay: postgres listen: %w", err)
	}
	go func() {
		defer close(f.done)
		f.run(lctx, conn)
	}()
	return f, nil
}

func (f *fanout) listen(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, f.dsn)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(cctx, "listen "+pgx.Identifier{f.channel}.Sanitize()); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

// run receives notifications until ctx is done, reconnecting with backoff.
func (f *fanout) run(ctx context.Context, conn *pgx.Conn) {
	backoff := 100 * time.Millisecond
	for {
		if conn != nil {
			err := f.receive(ctx, conn)
			conn.Close(context.Background())
			if ctx.Err() != nil {
				return
			}
			f.s.log.Warn("evolu relay: postgres broadcast listener lost; reconnecting", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		var err error
		if conn, err = f.listen(ctx); err != nil {
			conn = nil
			backoff = min(2*backoff, 10*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
	}
}

func (f *fanout) receive(ctx context.Context, conn *pgx.Conn) error {
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		origin, idText, ok := strings.Cut(n.Payload, " ")
		if !ok || origin == f.origin {
			continue
		}
		id, err := strconv.ParseInt(idText, 10, 64)
		if err != nil {
			continue
		}
		var ownerRaw, msg []byte
		qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = f.s.store.DB().QueryRowContext(qctx, `select owner, msg from evolu_broadcast where id = $1`, id).Scan(&ownerRaw, &msg)
		cancel()
		if err != nil {
			f.s.log.Debug("evolu relay: postgres broadcast gone", "id", id, "err", err)
			continue
		}
		var o protocol.OwnerID
		copy(o[:], ownerRaw)
		f.s.broadcast(o, nil, msg)
	}
}

// publish hands a Broadcast frame of owner o to the other processes.
func (f *fanout) publish(ctx context.Context, o protocol.OwnerID, msg []byte) {
	db := f.s.store.DB()
	_, err := db.ExecContext(ctx, `with b as (insert into evolu_broadcast (origin, owner, msg) values ($1, $2, $3) returning id)
		select pg_notify($4, $1 || ' ' || b.id) from b`, f.origin, o[:], msg, f.channel)
	if err != nil {
		f.s.log.Warn("evolu relay: postgres broadcast not published", "owner", o.String(), "err", err)
		return
	}
	f.mu.Lock()
	purge := time.Since(f.lastPurge) > 30*time.Second
	if purge {
		f.lastPurge = time.Now()
	}
	f.mu.Unlock()
	if purge {
		if _, err := db.ExecContext(ctx, `delete from evolu_broadcast where at < now() - interval '1 minute'`); err != nil {
			f.s.log.Warn("evolu relay: purge old broadcasts", "err", err)
		}
	}
}

func (f *fanout) stop() {
	f.cancel()
	<-f.done
}
