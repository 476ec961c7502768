package fakeopenai_test

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchyard/switchyard/internal/fakeopenai"
)

const testKey = "sk-test"

// newClient builds a real openai-go client pointed at srv.
func newClient(srv *fakeopenai.Server, opts ...option.RequestOption) openai.Client {
	base := []option.RequestOption{option.WithBaseURL(srv.URL()), option.WithAPIKey(testKey)}
	return openai.NewClient(append(base, opts...)...)
}

// assertRequiredFields walks a decoded openai-go value and fails for every
// field tagged api:"required" that was absent from the JSON we sent. Unions
// are checked through their AsAny variant, so every item and event shape is
// held to the SDK's own schema.
func assertRequiredFields(t *testing.T, path string, v any) {
	t.Helper()
	checkRequired(t, path, reflect.ValueOf(v), 0)
}

func checkRequired(t *testing.T, path string, v reflect.Value, depth int) {
	t.Helper()
	if depth > 12 || !v.IsValid() {
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			checkRequired(t, path, v.Elem(), depth+1)
		}
		return
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			checkRequired(t, path+"["+strconv.Itoa(i)+"]", v.Index(i), depth+1)
		}
		return
	case reflect.Struct:
	default:
		return
	}
	// A union's AsAny returns the concrete variant, which carries the tags.
	if m := v.MethodByName("AsAny"); m.IsValid() && m.Type().NumIn() == 0 && m.Type().NumOut() == 1 {
		checkRequired(t, path, m.Call(nil)[0], depth+1)
		return
	}
	meta := v.FieldByName("JSON")
	if !meta.IsValid() || meta.Kind() != reflect.Struct {
		return
	}
	typ := v.Type()
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if !f.IsExported() || f.Name == "JSON" {
			continue
		}
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		field := meta.FieldByName(f.Name)
		if !field.IsValid() {
			continue
		}
		raw := field.MethodByName("Raw").Call(nil)[0].String()
		if raw == "" && strings.Contains(f.Tag.Get("api"), "required") {
			t.Errorf("%s.%s: required field missing from the fake's JSON", path, name)
		}
		if raw != "" && raw != "null" { // only descend into values we actually sent
			checkRequired(t, path+"."+name, v.Field(i), depth+1)
		}
	}
}
