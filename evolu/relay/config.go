package relay

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// Config configures a relay. Zero fields take the defaults named on them;
// the limits are explained in docs/decisions/evolu-relay-memory.md.
type Config struct {
	// DBPath is the SQLite database file (created if missing, locked
	// against a second relay process), or a postgres:// URL, which several
	// relay processes may share (docs/relay.md).
	DBPath string
	// QuotaBytes, when positive, is the most change bytes one owner may
	// store; a write beyond it is answered ProtocolQuotaError and stores
	// nothing. Quota, when set, decides instead.
	QuotaBytes int64
	// Quota, when set, is the most change bytes each owner may store
	// (0: unlimited).
	Quota func(owner protocol.OwnerID) int64
	// TotalMaxSize is the ProtocolMessageMaxSize (default 1 MB, at most
	// 100 MB). A larger request is dropped unanswered.
	TotalMaxSize int
	// RangesMaxSize is the ProtocolMessageRangesMaxSize (default 30 KB).
	RangesMaxSize int
	// IsOwnerAllowed, when set, is asked before a WebSocket is accepted,
	// with the ownerId of the URL; a URL without a valid ownerId is then
	// refused with 400, a refused owner with 401.
	IsOwnerAllowed func(ctx context.Context, owner protocol.OwnerID) (bool, error)
	// Logger receives the relay's logs; nil discards them.
	Logger *slog.Logger

	// QueueBytes is how many outgoing bytes (replies and broadcasts) one
	// connection may have queued; a connection over it is closed as too
	// slow (default 2 MiB, at least 2 × TotalMaxSize).
	QueueBytes int64
	// TotalQueueBytes bounds the outgoing bytes queued over all
	// connections (default 256 MiB); a connection whose frame would go
	// over it is closed.
	TotalQueueBytes int64
	// MaxConns bounds open connections (default 10,000); more are refused
	// with 503.
	MaxConns int
	// MaxConnsPerAddr bounds open connections from one remote IP address
	// (default 256; negative: unlimited, for a relay behind a reverse proxy,
	// where every connection comes from the proxy); more are refused with
	// 429.
	MaxConnsPerAddr int
	// IdleTimeout closes a connection that sent nothing for this long and
	// is subscribed to no owner (default 5 min; negative: never).
	IdleTimeout time.Duration
	// PingInterval is how often the relay pings each connection; one that
	// does not answer within the interval is closed (default 30 s;
	// negative: no pings).
	PingInterval time.Duration
	// WriteTimeout bounds sending one frame (default 30 s).
	WriteTimeout time.Duration
}

// Defaults of Config.
const (
	DefaultQueueBytes      = 2 << 20
	DefaultTotalQueueBytes = 256 << 20
	DefaultMaxConns        = 10_000
	DefaultMaxConnsPerAddr = 256
	DefaultIdleTimeout     = 5 * time.Minute
	DefaultPingInterval    = 30 * time.Second
	DefaultWriteTimeout    = 30 * time.Second
)

// withDefaults checks cfg and fills in its defaults.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.DBPath == "" {
		return cfg, fmt.Errorf("relay: Config.DBPath is empty")
	}
	if cfg.TotalMaxSize == 0 {
		cfg.TotalMaxSize = protocol.DefaultMaxSize
	}
	if cfg.TotalMaxSize < protocol.MinMaxSize || cfg.TotalMaxSize > protocol.MaxMaxSize {
		return cfg, fmt.Errorf("relay: TotalMaxSize %d outside [%d, %d]", cfg.TotalMaxSize, protocol.MinMaxSize, protocol.MaxMaxSize)
	}
	if cfg.RangesMaxSize == 0 {
		cfg.RangesMaxSize = protocol.DefaultRangesMaxSize
	}
	if cfg.RangesMaxSize < protocol.MinRangesMaxSize || cfg.RangesMaxSize > protocol.MaxRangesMaxSize {
		return cfg, fmt.Errorf("relay: RangesMaxSize %d outside [%d, %d]", cfg.RangesMaxSize, protocol.MinRangesMaxSize, protocol.MaxRangesMaxSize)
	}
	if cfg.QueueBytes == 0 {
		cfg.QueueBytes = DefaultQueueBytes
	}
	cfg.QueueBytes = max(cfg.QueueBytes, 2*int64(cfg.TotalMaxSize))
	if cfg.TotalQueueBytes == 0 {
		cfg.TotalQueueBytes = DefaultTotalQueueBytes
	}
	cfg.TotalQueueBytes = max(cfg.TotalQueueBytes, cfg.QueueBytes)
	if cfg.MaxConns == 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.MaxConnsPerAddr == 0 {
		cfg.MaxConnsPerAddr = DefaultMaxConnsPerAddr
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.PingInterval == 0 {
		cfg.PingInterval = DefaultPingInterval
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return cfg, nil
}

// quotaFunc is the store's quota check, or nil for none.
func (cfg Config) quotaFunc() func(protocol.OwnerID, int64) bool {
	switch {
	case cfg.Quota != nil:
		return func(o protocol.OwnerID, n int64) bool {
			q := cfg.Quota(o)
			return q <= 0 || n <= q
		}
	case cfg.QuotaBytes > 0:
		return func(_ protocol.OwnerID, n int64) bool { return n <= cfg.QuotaBytes }
	}
	return nil
}
