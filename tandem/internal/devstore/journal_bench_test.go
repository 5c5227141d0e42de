package devstore

import (
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/client"
	"github.com/ferry-sync/ferry/tandem/internal/record"
)

// BenchmarkCommitSyncChunk: /commit commits what a pull stages before it
// commits (client's syncCommitItems: 4,096 writes) into a database that
// already holds 16 such chunks, each op a fresh chunk. The anchor,
// /raw-insert, inserts the same rows (ID, scope, stored bytes) into the
// same table in one transaction with a plain prepared INSERT: what storing
// them costs SQLite and the driver without the upsert and the checksum.
func BenchmarkCommitSyncChunk(b *testing.B) {
	const chunk = 4096
	run := func(b *testing.B, store func(db *DB, ws []*record.Write) error) {
		db, err := Open(b.Context(), b.TempDir()+"/d.db")
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		all := signedWritesN(b, [16]byte{7}, chunk*(16+b.N))
		for i := range 16 {
			if err := store(db, all[i*chunk:(i+1)*chunk]); err != nil {
				b.Fatal(err)
			}
		}
		all = all[16*chunk:]
		b.ResetTimer()
		for i := range b.N {
			if err := store(db, all[i*chunk:(i+1)*chunk]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*chunk), "ns/write")
	}
	b.Run("commit", func(b *testing.B) {
		run(b, func(db *DB, ws []*record.Write) error { return db.Commit(&client.Delta{Writes: ws}) })
	})
	b.Run("raw-insert", func(b *testing.B) {
		run(b, func(db *DB, ws []*record.Write) error {
			tx, err := db.SQL().Begin()
			if err != nil {
				return err
			}
			defer tx.Rollback()
			stmt, err := tx.Prepare("INSERT INTO writes(wid, scope, stored) VALUES(?, ?, ?)")
			if err != nil {
				return err
			}
			defer stmt.Close()
			var buf []byte
			for _, w := range ws {
				id, scope := w.ID(), w.Body().Scope
				buf = record.AppendStored(buf[:0], w)
				if _, err := stmt.Exec(id[:], scope[:], buf); err != nil {
					return err
				}
			}
			return tx.Commit()
		})
	})
}
