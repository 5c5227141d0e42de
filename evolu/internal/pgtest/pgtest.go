// Package pgtest gives a test its own database in the real PostgreSQL that
// scripts/setup.d/40-postgres.sh runs (FERRY_POSTGRES_DSN).
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver

	"github.com/ferry-sync/ferry/internal/realtest"
)

// Database creates an empty database for tb, dropped when tb ends, and
// returns its DSN. Without a server it ends tb by realtest.Unavailable.
func Database(tb testing.TB) string {
	tb.Helper()
	dsn := realtest.Getenv("FERRY_POSTGRES_DSN")
	if dsn == "" {
		realtest.Unavailable(tb, "FERRY_POSTGRES_DSN is not set: run scripts/setup.d/40-postgres.sh")
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		tb.Fatal(err)
	}
	if err := admin.PingContext(ctx); err != nil {
		admin.Close()
		realtest.Unavailable(tb, "PostgreSQL at FERRY_POSTGRES_DSN does not answer ("+err.Error()+"): run scripts/setup.d/40-postgres.sh")
		return ""
	}
	var b [6]byte
	rand.Read(b[:])
	name := "evolu_test_" + hex.EncodeToString(b[:])
	if _, err := admin.ExecContext(ctx, "create database "+name); err != nil {
		admin.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin.ExecContext(ctx, "drop database if exists "+name+" with (force)")
		admin.Close()
	})
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// Schema creates an empty schema in the database at dsn for tb and returns
// a DSN whose tables live in it (search_path): cheaper than a database
// when a test needs many empty stores.
func Schema(tb testing.TB, dsn string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	var b [6]byte
	rand.Read(b[:])
	name := "s_" + hex.EncodeToString(b[:])
	if _, err := db.ExecContext(ctx, "create schema "+name); err != nil {
		tb.Fatal(err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String()
}
