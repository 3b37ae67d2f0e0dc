package gguf

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"slices"
)

// maxDims is ggml's limit on the number of tensor dimensions.
const maxDims = 4

// ReadFile reads and parses the GGUF file at path.
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Parse decodes a whole GGUF v3 file. It checks the header, every metadata value, the tensor
// table, the alignment of the data section and of every tensor, that each tensor's bytes lie
// inside the file and that no two tensors overlap. Tensor data slices alias b.
func Parse(b []byte) (*File, error) {
	d := &decoder{b: b}
	f, err := d.file()
	if err != nil {
		return nil, fmt.Errorf("offset %d: %w", d.pos, err)
	}
	return f, nil
}

var errShort = errors.New("unexpected end of file")

// decoder reads little-endian values from b, remembering where it is for error messages.
type decoder struct {
	b   []byte
	pos int
}

func (d *decoder) remaining() int { return len(d.b) - d.pos }

func (d *decoder) bytes(n int) ([]byte, error) {
	if n < 0 || n > d.remaining() {
		return nil, errShort
	}
	p := d.b[d.pos : d.pos+n]
	d.pos += n
	return p, nil
}

func (d *decoder) u32() (uint32, error) {
	p, err := d.bytes(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(p), nil
}

func (d *decoder) u64() (uint64, error) {
	p, err := d.bytes(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(p), nil
}

func (d *decoder) str() (string, error) {
	n, err := d.u64()
	if err != nil {
		return "", err
	}
	if n > uint64(d.remaining()) {
		return "", fmt.Errorf("string of %d bytes runs past the end of the file", n)
	}
	p, _ := d.bytes(int(n))
	return string(p), nil
}

// The fewest bytes a metadata entry (a key's length, a value type and one byte of value) and a
// tensor entry (a name's length, a dimension count, one dimension, a type and an offset) take.
// Every entry takes some bytes, so a count larger than the rest of the file is a lie; checking
// against these keeps a corrupt count from allocating gigabytes.
const minKV, minTensor = 8 + 4 + 1, 8 + 4 + 8 + 4 + 8

// file decodes the whole file: the header, the metadata, the tensor table and the data section.
func (d *decoder) file() (*File, error) {
	nTensors, nKV, err := d.header()
	if err != nil {
		return nil, err
	}
	f := &File{}
	if f.KV, err = d.metadata(nKV); err != nil {
		return nil, err
	}
	align, err := f.Alignment()
	if err != nil {
		return nil, err
	}
	offsets, err := d.tensorTable(f, nTensors, align)
	if err != nil {
		return nil, err
	}
	if err := d.tensorData(f, offsets, align); err != nil {
		return nil, err
	}
	return f, nil
}

// header checks the magic and the version, and returns the tensor and metadata counts.
func (d *decoder) header() (nTensors, nKV uint64, err error) {
	magic, err := d.bytes(4)
	if err != nil {
		return 0, 0, err
	}
	if string(magic) != Magic {
		return 0, 0, fmt.Errorf("bad magic %q, want %q", magic, Magic)
	}
	version, err := d.u32()
	if err != nil {
		return 0, 0, err
	}
	if version != Version {
		return 0, 0, fmt.Errorf("version %d, want %d", version, Version)
	}
	if nTensors, err = d.u64(); err != nil {
		return 0, 0, err
	}
	if nKV, err = d.u64(); err != nil {
		return 0, 0, err
	}
	return nTensors, nKV, nil
}

// metadata decodes the nKV metadata entries, whose keys must be distinct.
func (d *decoder) metadata(nKV uint64) ([]KV, error) {
	if nKV > uint64(d.remaining()/minKV) {
		return nil, fmt.Errorf("%d metadata entries cannot fit in %d bytes", nKV, d.remaining())
	}
	kvs := make([]KV, 0, nKV)
	seen := make(map[string]bool, nKV)
	for i := range nKV {
		key, err := d.str()
		if err != nil {
			return nil, fmt.Errorf("metadata %d: key: %w", i, err)
		}
		if seen[key] {
			return nil, fmt.Errorf("metadata %d: duplicate key %q", i, key)
		}
		seen[key] = true
		v, err := d.value()
		if err != nil {
			return nil, fmt.Errorf("metadata %d (%s): %w", i, key, err)
		}
		kvs = append(kvs, KV{Key: key, Value: v})
	}
	return kvs, nil
}

// tensorTable decodes the nTensors entries of the tensor table into f.Tensors, without their
// data, and returns each tensor's offset in the data section.
func (d *decoder) tensorTable(f *File, nTensors uint64, align int) ([]uint64, error) {
	if nTensors > uint64(d.remaining()/minTensor) {
		return nil, fmt.Errorf("%d tensors cannot fit in %d bytes", nTensors, d.remaining())
	}
	f.Tensors = make([]Tensor, nTensors)
	offsets := make([]uint64, nTensors)
	names := make(map[string]bool, nTensors)
	for i := range f.Tensors {
		t := &f.Tensors[i]
		var err error
		if t.Name, err = d.str(); err != nil {
			return nil, fmt.Errorf("tensor %d: name: %w", i, err)
		}
		if names[t.Name] {
			return nil, fmt.Errorf("tensor %d: duplicate name %q", i, t.Name)
		}
		names[t.Name] = true
		if offsets[i], err = d.tensorInfo(t, align); err != nil {
			return nil, fmt.Errorf("tensor %s: %w", t.Name, err)
		}
	}
	return offsets, nil
}

// tensorInfo decodes what follows a tensor's name in the table, its dimensions and type, and
// returns its offset, which must be a multiple of the alignment.
func (d *decoder) tensorInfo(t *Tensor, align int) (uint64, error) {
	nDims, err := d.u32()
	if err != nil {
		return 0, err
	}
	if nDims == 0 || nDims > maxDims {
		return 0, fmt.Errorf("%d dimensions, want 1 to %d", nDims, maxDims)
	}
	t.Dims = make([]uint64, nDims)
	for j := range t.Dims {
		if t.Dims[j], err = d.u64(); err != nil {
			return 0, err
		}
	}
	typ, err := d.u32()
	if err != nil {
		return 0, err
	}
	t.Type = TensorType(typ)
	if t.Type.ElemSize() == 0 {
		return 0, fmt.Errorf("unsupported type %s", t.Type)
	}
	offset, err := d.u64()
	if err != nil {
		return 0, err
	}
	if offset%uint64(align) != 0 {
		return 0, fmt.Errorf("offset %d is not a multiple of the alignment %d", offset, align)
	}
	return offset, nil
}

// tensorData points each tensor at its bytes in the data section, which starts at the first
// aligned offset after the tensor table, and checks that they lie inside the file and that no
// two tensors overlap.
func (d *decoder) tensorData(f *File, offsets []uint64, align int) error {
	dataStart := alignUp(uint64(d.pos), uint64(align))
	if dataStart > uint64(len(d.b)) {
		return fmt.Errorf("data section starts at %d, past the end of the file (%d bytes)", dataStart, len(d.b))
	}
	data := d.b[dataStart:]
	type span struct{ start, end uint64 }
	spans := make([]span, len(f.Tensors))
	for i := range f.Tensors {
		t := &f.Tensors[i]
		size, ok := byteSize(t.Dims, t.Type)
		if !ok {
			return fmt.Errorf("tensor %s: size of %v %s overflows", t.Name, t.Dims, t.Type)
		}
		end, carry := bits.Add64(offsets[i], size, 0)
		if carry != 0 || end > uint64(len(data)) {
			return fmt.Errorf("tensor %s: bytes %d..%d of the data section run past its end (%d bytes)", t.Name, offsets[i], offsets[i]+size, len(data))
		}
		t.Data = data[offsets[i]:end:end]
		spans[i] = span{offsets[i], end}
	}
	slices.SortFunc(spans, func(a, b span) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.end, b.end))
	})
	for i := 1; i < len(spans); i++ {
		if spans[i].start < spans[i-1].end {
			return fmt.Errorf("tensor data overlaps at data offset %d", spans[i].start)
		}
	}
	return nil
}

// byteSize is the number of data bytes of a tensor, and false if that overflows.
func byteSize(dims []uint64, t TensorType) (uint64, bool) {
	n := uint64(t.ElemSize())
	for _, dim := range dims {
		hi, lo := bits.Mul64(n, dim)
		if hi != 0 {
			return 0, false
		}
		n = lo
	}
	return n, true
}

// value reads a type tag and the value it announces.
func (d *decoder) value() (any, error) {
	t, err := d.u32()
	if err != nil {
		return nil, err
	}
	typ := ValueType(t)
	if typ != TypeArray {
		return d.scalar(typ)
	}
	et, err := d.u32()
	if err != nil {
		return nil, err
	}
	elem := ValueType(et)
	n, err := d.u64()
	if err != nil {
		return nil, err
	}
	min := elem.scalarSize()
	switch {
	case elem == TypeString:
		min = 8
	case elem == TypeArray:
		return nil, errors.New("arrays of arrays are not supported")
	case min == 0:
		return nil, fmt.Errorf("array of unknown value type %s", elem)
	}
	if n > uint64(d.remaining()/min) {
		return nil, fmt.Errorf("array of %d %s cannot fit in %d bytes", n, elem, d.remaining())
	}
	return d.array(elem, int(n))
}

func (d *decoder) scalar(t ValueType) (any, error) {
	if t == TypeString {
		return d.str()
	}
	size := t.scalarSize()
	if size == 0 {
		return nil, fmt.Errorf("unknown value type %s", t)
	}
	p, err := d.bytes(size)
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return p[0], nil
	case TypeInt8:
		return int8(p[0]), nil
	case TypeUint16:
		return le.Uint16(p), nil
	case TypeInt16:
		return int16(le.Uint16(p)), nil
	case TypeUint32:
		return le.Uint32(p), nil
	case TypeInt32:
		return int32(le.Uint32(p)), nil
	case TypeFloat32:
		return math.Float32frombits(le.Uint32(p)), nil
	case TypeBool:
		return p[0] != 0, nil
	case TypeUint64:
		return le.Uint64(p), nil
	case TypeInt64:
		return int64(le.Uint64(p)), nil
	case TypeFloat64:
		return math.Float64frombits(le.Uint64(p)), nil
	}
	return nil, fmt.Errorf("unknown value type %s", t)
}

// array reads n elements of type t into a typed slice.
func (d *decoder) array(t ValueType, n int) (any, error) {
	switch t {
	case TypeUint8:
		return readArray[uint8](d, t, n)
	case TypeInt8:
		return readArray[int8](d, t, n)
	case TypeUint16:
		return readArray[uint16](d, t, n)
	case TypeInt16:
		return readArray[int16](d, t, n)
	case TypeUint32:
		return readArray[uint32](d, t, n)
	case TypeInt32:
		return readArray[int32](d, t, n)
	case TypeFloat32:
		return readArray[float32](d, t, n)
	case TypeBool:
		return readArray[bool](d, t, n)
	case TypeString:
		return readArray[string](d, t, n)
	case TypeUint64:
		return readArray[uint64](d, t, n)
	case TypeInt64:
		return readArray[int64](d, t, n)
	case TypeFloat64:
		return readArray[float64](d, t, n)
	}
	return nil, fmt.Errorf("array of unknown value type %s", t)
}

func readArray[T any](d *decoder, t ValueType, n int) ([]T, error) {
	out := make([]T, n)
	for i := range out {
		v, err := d.scalar(t)
		if err != nil {
			return nil, fmt.Errorf("array element %d: %w", i, err)
		}
		out[i] = v.(T)
	}
	return out, nil
}
