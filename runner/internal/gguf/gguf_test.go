package gguf

import (
	"bytes"
	"encoding/binary"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// sampleFile has one metadata entry of every supported type and tensors whose sizes are not
// multiples of the alignment, so that padding is exercised.
func sampleFile() *File {
	f32 := make([]byte, 4*3)     // 3 elements: 12 bytes, needs 20 bytes of padding
	f16 := make([]byte, 2*5*2)   // 5×2 elements: 20 bytes
	one := make([]byte, 2*1*1*1) // 4 dimensions of 1
	for i := range f32 {
		f32[i] = byte(0xA0 + i)
	}
	for i := range f16 {
		f16[i] = byte(0x10 + i)
	}
	one[0], one[1] = 0x3c, 0x77
	return &File{
		KV: []KV{
			{"general.architecture", "test"},
			{"general.alignment", uint32(32)},
			{"u8", uint8(200)},
			{"i8", int8(-100)},
			{"u16", uint16(60000)},
			{"i16", int16(-30000)},
			{"u32", uint32(4000000000)},
			{"i32", int32(-2000000000)},
			{"f32", float32(1.5)},
			{"bool.true", true},
			{"bool.false", false},
			{"str", "héllo ▁world"},
			{"empty", ""},
			{"u64", uint64(1) << 63},
			{"i64", int64(-1) << 62},
			{"f64", float64(-0.25)},
			{"arr.u8", []uint8{1, 2, 3}},
			{"arr.i8", []int8{-1, 0, 1}},
			{"arr.u16", []uint16{1, 65535}},
			{"arr.i16", []int16{-2, 2}},
			{"arr.u32", []uint32{7}},
			{"arr.i32", []int32{-7, 7}},
			{"arr.f32", []float32{0.5, -0.5}},
			{"arr.bool", []bool{true, false, true}},
			{"arr.str", []string{"a", "", "▁the"}},
			{"arr.u64", []uint64{1 << 40}},
			{"arr.i64", []int64{-(1 << 40)}},
			{"arr.f64", []float64{3.25}},
			{"arr.empty", []string{}},
		},
		Tensors: []Tensor{
			{Name: "a.weight", Dims: []uint64{3}, Type: TensorF32, Data: f32},
			{Name: "b.weight", Dims: []uint64{5, 2}, Type: TensorF16, Data: f16},
			{Name: "c", Dims: []uint64{1, 1, 1, 1}, Type: TensorF16, Data: one},
		},
	}
}

func encode(t testing.TB, f *File) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, f); err != nil {
		t.Fatalf("Write: %v", err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	want := sampleFile()
	b := encode(t, want)
	got, err := Parse(b)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if !reflect.DeepEqual(got.KV, want.KV) {
		for i := range want.KV {
			if i >= len(got.KV) || !reflect.DeepEqual(got.KV[i], want.KV[i]) {
				t.Errorf("KV[%d] = %#v, want %#v", i, got.KV[i], want.KV[i])
			}
		}
	}
	if !reflect.DeepEqual(got.Tensors, want.Tensors) {
		t.Errorf("Tensors = %+v, want %+v", got.Tensors, want.Tensors)
	}
	if again := encode(t, got); !bytes.Equal(again, b) {
		t.Errorf("re-encoding the parsed file changed its bytes")
	}
}

// TestLayout checks the encoding against the specification directly, not through Parse: the
// header fields, and that every tensor's bytes start at a multiple of the alignment.
func TestLayout(t *testing.T) {
	for _, align := range []uint32{32, 64, 8} {
		f := sampleFile()
		f.KV[1].Value = align
		b := encode(t, f)
		if string(b[:4]) != "GGUF" {
			t.Fatalf("magic %q", b[:4])
		}
		if v := binary.LittleEndian.Uint32(b[4:]); v != 3 {
			t.Errorf("version %d, want 3", v)
		}
		if n := binary.LittleEndian.Uint64(b[8:]); n != uint64(len(f.Tensors)) {
			t.Errorf("tensor count %d, want %d", n, len(f.Tensors))
		}
		if n := binary.LittleEndian.Uint64(b[16:]); n != uint64(len(f.KV)) {
			t.Errorf("kv count %d, want %d", n, len(f.KV))
		}
		// The first key follows the header: a uint64 length, then the bytes.
		if n := binary.LittleEndian.Uint64(b[24:]); n != uint64(len("general.architecture")) || string(b[32:32+n]) != "general.architecture" {
			t.Errorf("first key is not general.architecture")
		}
		// The tensor contents are distinct byte patterns, so their positions can be found.
		var prevEnd int
		for _, tn := range f.Tensors {
			at := bytes.Index(b[prevEnd:], tn.Data)
			if at < 0 {
				t.Fatalf("align %d: tensor %s data not found", align, tn.Name)
			}
			at += prevEnd
			if at%int(align) != 0 {
				t.Errorf("align %d: tensor %s starts at byte %d, not a multiple of the alignment", align, tn.Name, at)
			}
			prevEnd = at + len(tn.Data)
		}
		if prevEnd != len(b) {
			t.Errorf("align %d: %d bytes after the last tensor", align, len(b)-prevEnd)
		}
		if _, err := Parse(b); err != nil {
			t.Errorf("align %d: Parse: %v", align, err)
		}
	}
}

func TestGolden(t *testing.T) {
	b := encode(t, sampleFile())
	path := filepath.Join("testdata", "sample.gguf")
	if *update {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("encoding differs from %s (%d bytes, want %d); run go test -update if the change is intended", path, len(b), len(want))
	}
}

func TestWriteErrors(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*File)
		want   string
	}{
		{"short data", func(f *File) { f.Tensors[0].Data = f.Tensors[0].Data[:4] }, "want 12"},
		{"quantised type", func(f *File) { f.Tensors[1].Type = 2 }, "unsupported type"},
		{"no dims", func(f *File) { f.Tensors[0].Dims = nil }, "dimensions"},
		{"five dims", func(f *File) { f.Tensors[2].Dims = []uint64{1, 1, 1, 1, 1} }, "dimensions"},
		{"value type", func(f *File) { f.KV[3].Value = 3 }, "unsupported value type int"},
		{"nested array", func(f *File) { f.KV[3].Value = [][]string{{"a"}} }, "unsupported value type"},
		{"alignment type", func(f *File) { f.KV[1].Value = 32 }, "want uint32"},
		{"alignment value", func(f *File) { f.KV[1].Value = uint32(48) }, "power of two"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := sampleFile()
			tt.mutate(f)
			err := Write(&bytes.Buffer{}, f)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Write error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// offsetOf finds where s is encoded in b as a GGUF string and returns the offset just past it.
func offsetOf(t *testing.T, b []byte, s string) int {
	t.Helper()
	enc := binary.LittleEndian.AppendUint64(nil, uint64(len(s)))
	enc = append(enc, s...)
	i := bytes.Index(b, enc)
	if i < 0 {
		t.Fatalf("%q not found", s)
	}
	return i + len(enc)
}

func TestParseErrors(t *testing.T) {
	base := encode(t, sampleFile())
	le := binary.LittleEndian
	tests := []struct {
		name   string
		mutate func(t *testing.T, b []byte) []byte
		want   string
	}{
		{"empty", func(t *testing.T, b []byte) []byte { return nil }, "unexpected end"},
		{"magic", func(t *testing.T, b []byte) []byte { b[0] = 'X'; return b }, "bad magic"},
		{"version 2", func(t *testing.T, b []byte) []byte { le.PutUint32(b[4:], 2); return b }, "version 2"},
		{"tensor count", func(t *testing.T, b []byte) []byte { le.PutUint64(b[8:], 1<<40); return b }, "tensors cannot fit"},
		{"kv count", func(t *testing.T, b []byte) []byte { le.PutUint64(b[16:], 1<<60); return b }, "metadata entries cannot fit"},
		{"truncated header", func(t *testing.T, b []byte) []byte { return b[:offsetOf(t, b, "arr.str")+2] }, "unexpected end"},
		{"truncated data", func(t *testing.T, b []byte) []byte { return b[:len(b)-1] }, "run past its end"},
		{"string length", func(t *testing.T, b []byte) []byte { le.PutUint64(b[24:], 1<<50); return b }, "runs past the end"},
		{"value type", func(t *testing.T, b []byte) []byte {
			le.PutUint32(b[offsetOf(t, b, "u8"):], 99)
			return b
		}, "unknown value type type(99)"},
		{"array element type", func(t *testing.T, b []byte) []byte {
			le.PutUint32(b[offsetOf(t, b, "arr.u8")+4:], uint32(TypeArray))
			return b
		}, "arrays of arrays"},
		{"array length", func(t *testing.T, b []byte) []byte {
			le.PutUint64(b[offsetOf(t, b, "arr.f64")+8:], 1<<61)
			return b
		}, "cannot fit"},
		{"duplicate key", func(t *testing.T, b []byte) []byte {
			i := offsetOf(t, b, "u16")
			copy(b[i-3:i], "u32")
			return b
		}, `duplicate key "u32"`},
		{"alignment", func(t *testing.T, b []byte) []byte {
			le.PutUint32(b[offsetOf(t, b, "general.alignment")+4:], 33)
			return b
		}, "power of two"},
		{"dims", func(t *testing.T, b []byte) []byte {
			le.PutUint32(b[offsetOf(t, b, "a.weight"):], 5)
			return b
		}, "5 dimensions"},
		{"tensor type", func(t *testing.T, b []byte) []byte {
			le.PutUint32(b[offsetOf(t, b, "a.weight")+4+8:], 8)
			return b
		}, "unsupported type ggml_type(8)"},
		{"misaligned", func(t *testing.T, b []byte) []byte {
			le.PutUint64(b[offsetOf(t, b, "b.weight")+4+16+4:], 33)
			return b
		}, "not a multiple of the alignment"},
		{"overlap", func(t *testing.T, b []byte) []byte {
			le.PutUint64(b[offsetOf(t, b, "b.weight")+4+16+4:], 0)
			return b
		}, "overlaps"},
		{"duplicate tensor", func(t *testing.T, b []byte) []byte {
			i := offsetOf(t, b, "b.weight")
			copy(b[i-8:i], "a.weight")
			return b
		}, "duplicate name"},
		{"size overflow", func(t *testing.T, b []byte) []byte {
			le.PutUint64(b[offsetOf(t, b, "b.weight")+4:], 1<<62)
			return b
		}, "overflows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.mutate(t, bytes.Clone(base))
			f, err := Parse(b)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error = %v, want one containing %q", err, tt.want)
			}
			if err != nil && f != nil {
				t.Errorf("Parse returned a file with an error")
			}
			if err != nil && !strings.HasPrefix(err.Error(), "offset ") {
				t.Errorf("error %q does not say where", err)
			}
		})
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	if err := os.WriteFile(path, encode(t, sampleFile()), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFile(path)
	if err != nil {
		t.Fatalf("ReadFile: %v", err)
	}
	if v, _ := f.Get("str"); v != "héllo ▁world" {
		t.Errorf("str = %v", v)
	}
	if f.Tensor("b.weight") == nil || f.Tensor("missing") != nil {
		t.Errorf("Tensor lookup is wrong")
	}
	if err := os.WriteFile(path, []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("ReadFile of a truncated file: error %v does not name the file", err)
	}
}

// FuzzParse checks that Parse never panics and that whatever it accepts survives a
// write/parse round trip byte for byte.
func FuzzParse(f *testing.F) {
	f.Add(encode(f, sampleFile()))
	small := encode(f, &File{KV: []KV{{"k", "v"}}})
	f.Add(small)
	f.Add([]byte("GGUF"))
	tiny, err := TinyLlama(Params{Seed: 1, Embedding: 8, Layers: 1, Heads: 2, KVHeads: 1, FeedForward: 8, Context: 16})
	if err != nil {
		f.Fatal(err)
	}
	// The tokenizer arrays make the model large for a fuzz seed; keep its head and one tensor.
	tiny.KV = tiny.KV[:16]
	tiny.Tensors = tiny.Tensors[len(tiny.Tensors)-2 : len(tiny.Tensors)-1]
	f.Add(encode(f, tiny))
	f.Fuzz(func(t *testing.T, b []byte) {
		parsed, err := Parse(b)
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := Write(&buf, parsed); err != nil {
			t.Fatalf("Write of a parsed file: %v", err)
		}
		again, err := Parse(buf.Bytes())
		if err != nil {
			t.Fatalf("Parse of a re-encoded file: %v", err)
		}
		var buf2 bytes.Buffer
		if err := Write(&buf2, again); err != nil {
			t.Fatalf("second Write: %v", err)
		}
		if !bytes.Equal(buf.Bytes(), buf2.Bytes()) {
			t.Fatalf("round trip is not stable")
		}
	})
}
