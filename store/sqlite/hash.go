package sqlite

import (
	"crypto/sha256"
	"database/sql/driver"
	"fmt"

	"modernc.org/sqlite"
)

// definitionHash is the content hash a run references its definition by
// (nil for none): sha256 of its bytes, as switchyard_sha256 computes it
// in SQL and PostgreSQL's sha256(convert_to(definition, 'UTF8')).
func definitionHash(def []byte) any {
	if len(def) == 0 {
		return nil
	}
	h := sha256.Sum256(def)
	return h[:]
}

// switchyard_sha256 lets migration 10 hash the definitions already stored
// (SQLite has no hash function of its own). Registered for every
// connection the driver opens from now on.
func init() {
	sqlite.MustRegisterDeterministicScalarFunction("switchyard_sha256", 1,
		func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
			switch v := args[0].(type) {
			case nil:
				return nil, nil
			case string:
				h := sha256.Sum256([]byte(v))
				return h[:], nil
			case []byte:
				h := sha256.Sum256(v)
				return h[:], nil
			}
			return nil, fmt.Errorf("switchyard_sha256: %T is not text", args[0])
		})
}
