package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// replicate copies the runs first stored (ids of 36 characters: UUIDs)
// under new ids and later times, with the rows of every table keyed by
// run id, until the database holds to runs. It works on either schema
// (before definitions were shared, and after), reading the columns of
// each table.
func replicate(path string, to int) error {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(0)")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var have, originals int
	var span int64
	if err := db.QueryRowContext(ctx, `SELECT count(*), sum(length(id) = 36), max(created_at) - min(created_at) + 1 FROM runs`).
		Scan(&have, &originals, &span); err != nil {
		return err
	}
	cols := func(table string) ([]string, error) {
		rows, err := db.QueryContext(ctx, `SELECT name FROM pragma_table_info(?)`, table)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		return out, rows.Err()
	}
	tables := []string{"runs", "node_states", "run_events"}
	var exists int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE name = 'run_definitions'`).Scan(&exists); err != nil {
		return err
	}
	if exists == 1 {
		tables = append(tables, "run_definitions") // a copy per run, before definitions were shared
	}
	columns := map[string][]string{}
	for _, table := range tables {
		if columns[table], err = cols(table); err != nil {
			return err
		}
	}
	const chunk = 20000
	for k := 1; have < to; k++ {
		for off := 0; off < originals && have < to; off += chunk {
			n := min(chunk, originals-off, to-have)
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `DROP TABLE IF EXISTS temp.pick`); err != nil {
				_ = tx.Rollback()
				return err
			}
			if _, err := tx.ExecContext(ctx, `CREATE TEMP TABLE pick AS SELECT id FROM runs WHERE length(id) = 36
ORDER BY created_at, id LIMIT ? OFFSET ?`, n, off); err != nil {
				_ = tx.Rollback()
				return err
			}
			for _, table := range tables {
				cs := columns[table]
				key := "run_id"
				if table == "runs" {
					key = "id"
				}
				exprs := make([]string, len(cs))
				for i, c := range cs {
					switch c {
					case key:
						exprs[i] = fmt.Sprintf("%s || '-r%d'", c, k)
					case "created_at", "updated_at", "finished_at":
						if table == "runs" {
							exprs[i] = fmt.Sprintf("%s + %d", c, int64(k)*span)
							continue
						}
						exprs[i] = c
					default:
						exprs[i] = c
					}
				}
				q := fmt.Sprintf(`INSERT INTO %s (%s) SELECT %s FROM %s WHERE %s IN (SELECT id FROM temp.pick)`,
					table, strings.Join(cs, ", "), strings.Join(exprs, ", "), table, key)
				if _, err := tx.ExecContext(ctx, q); err != nil {
					_ = tx.Rollback()
					return fmt.Errorf("copy %s: %w", table, err)
				}
			}
			if err := tx.Commit(); err != nil {
				return err
			}
			have += n
		}
	}
	_, err = db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}
