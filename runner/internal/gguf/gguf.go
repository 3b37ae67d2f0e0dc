// Package gguf writes and reads GGUF version 3 files, the single-file model format of llama.cpp
// and ollama, and generates a tiny llama-architecture model with random weights (see TinyLlama)
// so that a real engine can be run in tests without downloading anything.
//
// The reader is deliberately small: it understands every metadata value type and the tensor
// table, checks the layout (alignment, bounds, sizes), and keeps the tensor bytes of the two
// tensor types the writer produces (F32 and F16). It is not a general model loader.
//
// A GGUF file is, in order: the magic "GGUF", a uint32 version, a uint64 tensor count, a uint64
// metadata count, the metadata key/value pairs, the tensor infos (name, dimensions, type, offset
// into the data section), padding to the alignment, and the data section, in which every
// tensor starts at a multiple of the alignment. All integers are little-endian; strings are a
// uint64 byte length followed by UTF-8 bytes without a terminator.
package gguf

import (
	"fmt"
)

// Magic is the four bytes every GGUF file starts with.
const Magic = "GGUF"

// Version is the GGUF format version this package writes and reads.
const Version = 3

// DefaultAlignment is the alignment of the data section and of every tensor in it when the
// file does not set general.alignment.
const DefaultAlignment = 32

// KeyAlignment is the metadata key that overrides the default alignment.
const KeyAlignment = "general.alignment"

// maxAlignment bounds general.alignment: real files use 32, and a huge value would only make
// the writer pad with gigabytes of zeros.
const maxAlignment = 1 << 16

// ValueType is the type tag of a metadata value on disk.
type ValueType uint32

// The metadata value types of GGUF v3.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

// String returns the name GGUF's specification uses for the type.
func (t ValueType) String() string {
	switch t {
	case TypeUint8:
		return "uint8"
	case TypeInt8:
		return "int8"
	case TypeUint16:
		return "uint16"
	case TypeInt16:
		return "int16"
	case TypeUint32:
		return "uint32"
	case TypeInt32:
		return "int32"
	case TypeFloat32:
		return "float32"
	case TypeBool:
		return "bool"
	case TypeString:
		return "string"
	case TypeArray:
		return "array"
	case TypeUint64:
		return "uint64"
	case TypeInt64:
		return "int64"
	case TypeFloat64:
		return "float64"
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// scalarSize is the encoded size of a fixed-size value type, or 0 for strings and arrays.
func (t ValueType) scalarSize() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// TensorType is the element type of a tensor (ggml_type). Only the two unquantised float types
// are supported.
type TensorType uint32

// The tensor types this package writes and reads.
const (
	TensorF32 TensorType = 0
	TensorF16 TensorType = 1
)

// String returns ggml's name for the type.
func (t TensorType) String() string {
	switch t {
	case TensorF32:
		return "F32"
	case TensorF16:
		return "F16"
	}
	return fmt.Sprintf("ggml_type(%d)", uint32(t))
}

// ElemSize is the size in bytes of one element, or 0 for a type this package does not know.
func (t TensorType) ElemSize() int {
	switch t {
	case TensorF32:
		return 4
	case TensorF16:
		return 2
	}
	return 0
}

// KV is one metadata entry. Value holds one of the Go types that map to a GGUF value type:
// uint8, int8, uint16, int16, uint32, int32, float32, bool, string, uint64, int64, float64, or
// a slice of one of those (an array). Arrays of arrays are valid GGUF but not supported.
type KV struct {
	Key   string
	Value any
}

// Tensor is one tensor: its name, its dimensions in ggml order (Dims[0] is the number of
// elements in a row, the fastest-varying index), its element type and its raw little-endian
// bytes.
type Tensor struct {
	Name string
	Dims []uint64
	Type TensorType
	Data []byte
}

// Elements returns the number of elements, the product of the dimensions.
func (t *Tensor) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// File is a whole GGUF file in memory: metadata in file order, tensors in file order.
type File struct {
	KV      []KV
	Tensors []Tensor
}

// Get returns the value of the metadata key and whether it is present.
func (f *File) Get(key string) (any, bool) {
	for _, kv := range f.KV {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return nil, false
}

// Tensor returns the named tensor, or nil.
func (f *File) Tensor(name string) *Tensor {
	for i := range f.Tensors {
		if f.Tensors[i].Name == name {
			return &f.Tensors[i]
		}
	}
	return nil
}

// Alignment returns the alignment the file declares in general.alignment, or DefaultAlignment.
func (f *File) Alignment() (int, error) {
	v, ok := f.Get(KeyAlignment)
	if !ok {
		return DefaultAlignment, nil
	}
	a, ok := v.(uint32)
	if !ok {
		return 0, fmt.Errorf("%s is %T, want uint32", KeyAlignment, v)
	}
	if a == 0 || a&(a-1) != 0 || a > maxAlignment {
		return 0, fmt.Errorf("%s is %d, want a power of two up to %d", KeyAlignment, a, maxAlignment)
	}
	return int(a), nil
}

// alignUp rounds n up to a multiple of align (a power of two).
func alignUp(n uint64, align uint64) uint64 {
	return (n + align - 1) &^ (align - 1)
}
