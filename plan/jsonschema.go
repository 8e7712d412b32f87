package plan

import (
	"encoding/json"
	"reflect"
	"time"
)

// SchemaID is the $id of the scenario format's JSON Schema.
const SchemaID = "https://github.com/chaoskit/chaoskit/scenario.schema.json"

// JSONSchema returns a JSON Schema (draft 2020-12) of the scenario format,
// made from the YAML structs themselves (Scenario and what it holds), so it
// cannot drift from what the loader reads. An editor with the YAML language
// server completes and checks a scenario against it
// (`# yaml-language-server: $schema=scenario.schema.json`, docs/schema.md).
//
// It says which keys exist where (a misspelt key is refused, as the loader
// refuses it) and the shape of each value. What the loader checks beyond
// shapes (a contract's expression, which point a fault names, a duration's
// syntax) is the loader's: a value of a type with a syntax of its own
// (Duration, Rate, a range, an include) is any scalar or list here. A number
// or boolean may also be a string holding ${name}, as variables stand for
// values before the file is read.
func JSONSchema() ([]byte, error) {
	g := &schemaGen{defs: map[string]any{}}
	root := g.object(reflect.TypeOf(Scenario{}))
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["$id"] = SchemaID
	root["title"] = "chaoskit scenario"
	root["$defs"] = g.defs
	return json.MarshalIndent(root, "", "  ")
}

type schemaGen struct {
	defs map[string]any
}

var durationType = reflect.TypeOf(time.Duration(0))

// withVar lets a number or boolean be written as a string holding ${name}.
func withVar(s map[string]any) map[string]any {
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "string", "pattern": `\$\{`}}}
}

func (g *schemaGen) schema(t reflect.Type) map[string]any {
	if reflect.PointerTo(t).Implements(nodeUnmarshaler) {
		return map[string]any{"description": t.Name() + ": a value with a syntax of its own, checked by the loader (docs/scenarios.md)"}
	}
	if t == durationType {
		return map[string]any{"type": "string"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		inner := g.schema(t.Elem())
		return map[string]any{"anyOf": []any{inner, map[string]any{"type": "null"}}}
	case reflect.Struct:
		name := t.Name()
		if _, ok := g.defs[name]; !ok {
			g.defs[name] = nil // a placeholder against recursion
			g.defs[name] = g.object(t)
		}
		return map[string]any{"$ref": "#/$defs/" + name}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string"}
		}
		return map[string]any{"type": "array", "items": g.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.schema(t.Elem())}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return withVar(map[string]any{"type": "boolean"})
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return withVar(map[string]any{"type": "integer"})
	case reflect.Float32, reflect.Float64:
		return withVar(map[string]any{"type": "number"})
	}
	return map[string]any{}
}

// object is the schema of a struct: the keys the loader knows of it
// (structFields, inline fields' among them), and no other.
func (g *schemaGen) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	fs := structFields(t)
	for _, name := range fs.names {
		props[name] = g.schema(fs.byName[name].Type)
	}
	return map[string]any{"type": "object", "properties": props, "additionalProperties": false}
}
