package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// Kind is what a database is for; it is stamped into the file (SQLite's
// application_id) so that a relay never opens a client's database and the
// other way round (docs/decisions/evolu-shared-database.md).
type Kind int

const (
	// KindRelay is a relay's database (the zero Kind).
	KindRelay Kind = iota
	// KindClient is a client's database.
	KindClient
)

// Application ids stamped into SQLite files: "EvoR" and "EvoC".
const (
	appIDRelay  = 0x45766f52
	appIDClient = 0x45766f43
)

func (k Kind) appID() int64 {
	if k == KindClient {
		return appIDClient
	}
	return appIDRelay
}

func (k Kind) String() string {
	if k == KindClient {
		return "an Evolu client database"
	}
	return "an Evolu relay database"
}

// ErrWrongKind is matched (errors.Is) by a *WrongKindError.
var ErrWrongKind = errors.New("sqlstore: wrong kind of database")

// WrongKindError is returned by Open for a database of another kind or of
// another program.
type WrongKindError struct {
	Path string
	Want Kind
	// Found describes what the file is instead.
	Found string
}

func (e *WrongKindError) Error() string {
	return fmt.Sprintf("%s is %s, not %s: pick another --db file", e.Path, e.Found, e.Want)
}

// Is makes errors.Is(err, ErrWrongKind) hold.
func (e *WrongKindError) Is(target error) bool { return target == ErrWrongKind }

// ErrLocked is matched (errors.Is) by a *LockedError.
var ErrLocked = errors.New("sqlstore: database in use")

// LockedError is returned by Open with Config.Exclusive when another
// process holds the database.
type LockedError struct{ Path string }

func (e *LockedError) Error() string {
	return fmt.Sprintf("%s is in use by another relay process: stop it first (one relay process per SQLite file; several relay processes need a Postgres database)", e.Path)
}

// Is makes errors.Is(err, ErrLocked) hold.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// stamp checks the kind of the database and stamps a new one. It reports
// whether the database existed before stamps (a database written by an
// earlier build, whose index is then verified).
func stamp(ctx context.Context, db *sql.DB, path string, want Kind) (legacy bool, err error) {
	var id int64
	if err := db.QueryRowContext(ctx, `pragma application_id`).Scan(&id); err != nil {
		return false, fmt.Errorf("sqlstore: %s: %w", path, err)
	}
	switch id {
	case want.appID():
		return false, nil
	case appIDRelay:
		return false, &WrongKindError{Path: path, Want: want, Found: KindRelay.String()}
	case appIDClient:
		return false, &WrongKindError{Path: path, Want: want, Found: KindClient.String()}
	case 0:
	default:
		return false, &WrongKindError{Path: path, Want: want, Found: fmt.Sprintf("the database of another program (application_id %#x)", id)}
	}
	tables, err := tableNames(ctx, db)
	if err != nil {
		return false, fmt.Errorf("sqlstore: %s: %w", path, err)
	}
	evolu, client := false, tables["evolu_row"]
	for name := range tables {
		if !strings.HasPrefix(name, "evolu_") {
			return false, &WrongKindError{Path: path, Want: want, Found: fmt.Sprintf("the database of another program (table %s)", name)}
		}
		evolu = true
	}
	switch {
	case evolu && client && want != KindClient:
		return false, &WrongKindError{Path: path, Want: want, Found: KindClient.String()}
	case evolu && !client && want == KindClient:
		return false, &WrongKindError{Path: path, Want: want, Found: KindRelay.String()}
	}
	if _, err := db.ExecContext(ctx, fmt.Sprintf(`pragma application_id = %d`, want.appID())); err != nil {
		return false, fmt.Errorf("sqlstore: %s: stamp: %w", path, err)
	}
	return evolu, nil
}

func tableNames(ctx context.Context, db *sql.DB) (map[string]bool, error) {
	rows, err := db.QueryContext(ctx, `select name from sqlite_schema where type = 'table' and name not like 'sqlite_%'`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out[n] = true
	}
	return out, rows.Err()
}

// migrate brings a database of an earlier build up to the schema: the
// owner's generation column (docs/decisions/evolu-shared-database.md), and
// the fingerprints moved from evolu_ts into evolu_change
// (docs/decisions/evolu-block-row-cache.md).
func migrate(ctx context.Context, db *sql.DB) error {
	if err := migrateTimestamps(ctx, db); err != nil {
		return err
	}
	has, err := hasColumn(ctx, db, "evolu_owner", "gen")
	if err != nil || has {
		return err
	}
	if _, err := db.ExecContext(ctx, `alter table evolu_owner add column gen integer not null default 0`); err != nil {
		return fmt.Errorf("sqlstore: migrate: %w", err)
	}
	return nil
}

func hasColumn(ctx context.Context, db *sql.DB, table, column string) (bool, error) {
	rows, err := db.QueryContext(ctx, `select name from pragma_table_info(?)`, table)
	if err != nil {
		return false, fmt.Errorf("sqlstore: migrate: %w", err)
	}
	defer rows.Close()
	has := false
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return false, fmt.Errorf("sqlstore: migrate: %w", err)
		}
		has = has || n == column
	}
	return has, rows.Err()
}

// migrateTimestamps moves the fingerprints of a database of an earlier
// build from evolu_ts into evolu_change.fp and drops evolu_ts, in one
// transaction.
func migrateTimestamps(ctx context.Context, db *sql.DB) error {
	tables, err := tableNames(ctx, db)
	if err != nil || !tables["evolu_ts"] {
		return err
	}
	hasFP, err := hasColumn(ctx, db, "evolu_change", "fp")
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlstore: migrate: %w", err)
	}
	defer tx.Rollback()
	steps := []string{
		`update evolu_change set fp = (select s.fp from evolu_ts s where s.owner = evolu_change.owner and s.t = evolu_change.t)
			where exists (select 1 from evolu_ts s where s.owner = evolu_change.owner and s.t = evolu_change.t)`,
		`drop table evolu_ts`,
	}
	if !hasFP {
		steps = append([]string{`alter table evolu_change add column fp blob not null default x''`}, steps...)
	}
	for _, q := range steps {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("sqlstore: migrate: %w", err)
		}
	}
	if err := fillFingerprints(ctx, tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlstore: migrate: %w", err)
	}
	return nil
}

// fillFingerprints computes the fingerprints evolu_ts did not have.
func fillFingerprints(ctx context.Context, tx *sql.Tx) error {
	for {
		rows, err := tx.QueryContext(ctx, `select owner, t from evolu_change where length(fp) != 12 limit 1000`)
		if err != nil {
			return fmt.Errorf("sqlstore: migrate: %w", err)
		}
		var keys [][2][]byte
		for rows.Next() {
			var o, t []byte
			if err := rows.Scan(&o, &t); err != nil {
				rows.Close()
				return fmt.Errorf("sqlstore: migrate: %w", err)
			}
			keys = append(keys, [2][]byte{o, t})
		}
		rows.Close()
		if len(keys) == 0 {
			return nil
		}
		for _, k := range keys {
			fp := protocol.TimestampFingerprint(protocol.TimestampBytes(k[1]))
			if _, err := tx.ExecContext(ctx, `update evolu_change set fp = ? where owner = ? and t = ?`, fp[:], k[0], k[1]); err != nil {
				return fmt.Errorf("sqlstore: migrate: %w", err)
			}
		}
	}
}

// setClean records whether the database was closed cleanly by its
// exclusive owner.
func setClean(ctx context.Context, db *sql.DB, clean bool) error {
	v := 0
	if clean {
		v = 1
	}
	_, err := db.ExecContext(ctx, `insert into evolu_meta (k, v) values ('clean', ?)
		on conflict (k) do update set v = excluded.v`, v)
	return err
}

func isClean(ctx context.Context, db *sql.DB) (bool, error) {
	var v int
	err := db.QueryRowContext(ctx, `select v from evolu_meta where k = 'clean'`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return v == 1, err
}
