package memory

import (
	"testing"

	"github.com/switchyard/switchyard/store"
	"github.com/switchyard/switchyard/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, o storetest.Options) store.Store {
		if o.Share != nil {
			return o.Share // memory cannot be shared: the same store
		}
		var opts []Option
		if o.Now != nil {
			opts = append(opts, WithClock(o.Now))
		}
		s := New(opts...)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
