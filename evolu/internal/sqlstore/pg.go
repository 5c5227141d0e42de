package sqlstore

import (
	"context"
	"database/sql"
	"fmt"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// pgSchema is schema in Postgres. evolu_broadcast carries broadcasts
// between the relay processes of one database (package relay).
const pgSchema = `
create table if not exists evolu_block (
  owner bytea not null, start bytea not null, n integer not null, fp bytea not null, primary key (owner, start));
create table if not exists evolu_block_rows (
  owner bytea not null, start bytea not null, rows bytea not null, primary key (owner, start));
create table if not exists evolu_change (
  owner bytea not null, t bytea not null, fp bytea not null, change bytea not null, primary key (owner, t));
create table if not exists evolu_owner (
  owner bytea primary key, write_key bytea, stored_bytes bigint not null default 0,
  gen bigint not null default 0);
create table if not exists evolu_meta (k text primary key, v bigint not null);
create table if not exists evolu_broadcast (
  id bigserial primary key, origin text not null, owner bytea not null, msg bytea not null,
  at timestamptz not null default now());
`

// pgSchemaLock is the advisory lock key under which relay processes
// starting together create the schema one at a time.
const pgSchemaLock = 0x45766f52

// pgMaxConns bounds a Postgres store's connection pool.
const pgMaxConns = 8

// OpenPostgres opens a relay store in the Postgres database at dsn
// (postgres://…), creating the schema if needed. Several processes may
// open one database: each write locks the owner's row and checks its
// generation, and Refresh makes a process see the others' writes
// (docs/decisions/evolu-shared-database.md). Config.Exclusive and
// Config.MustExist do not apply.
func OpenPostgres(ctx context.Context, dsn string, cfg Config) (*Store, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: postgres: %w", err)
	}
	db.SetMaxOpenConns(pgMaxConns)
	db.SetMaxIdleConns(pgMaxConns)
	cfg.Exclusive, cfg.MustExist = false, false
	s := &Store{db: db, cfg: cfg, pg: true, owners: make(map[protocol.OwnerID]*ownerIndex), stmts: make(map[string]*sql.Stmt),
		rows: newRowCache(maxCachedBlocks)}
	if err := s.pgSchema(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) pgSchema(ctx context.Context) error {
	c, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlstore: postgres: %w", err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, `select pg_advisory_lock($1)`, pgSchemaLock); err != nil {
		return fmt.Errorf("sqlstore: postgres: %w", err)
	}
	defer c.ExecContext(context.WithoutCancel(ctx), `select pg_advisory_unlock($1)`, pgSchemaLock)
	if _, err := c.ExecContext(ctx, pgSchema); err != nil {
		return fmt.Errorf("sqlstore: postgres schema: %w", err)
	}
	var kind int64
	err = c.QueryRowContext(ctx, `insert into evolu_meta (k, v) values ('kind', $1) on conflict (k) do update set v = evolu_meta.v returning v`, int64(s.cfg.Kind.appID())).Scan(&kind)
	if err != nil {
		return fmt.Errorf("sqlstore: postgres: %w", err)
	}
	if kind != s.cfg.Kind.appID() {
		return &WrongKindError{Path: "the Postgres database", Want: s.cfg.Kind, Found: fmt.Sprintf("another kind (%#x)", kind)}
	}
	return nil
}

// IsPostgres reports whether the store is in Postgres.
func (s *Store) IsPostgres() bool { return s.pg }
