package parquet

// This file writes the footer: the file's metadata in the Thrift compact protocol.

// The Parquet enums the writer uses, numbered as the Parquet format's parquet.thrift
// (apache/parquet-format) numbers them.
const (
	physBoolean   = 0
	physInt64     = 2
	physDouble    = 5
	physByteArray = 6

	repRequired = 0
	repOptional = 1

	convUTF8  = 0
	convInt64 = 18

	encPlain = 0
	encRLE   = 3

	codecUncompressed = 0
	codecGzip         = 2
	pageData          = 0
)

// footer returns the file's FileMetaData in the Thrift compact protocol.
func (w *Writer) footer() []byte {
	var c compact
	c.beginStruct()
	c.i32Field(1, 1) // version
	c.listField(2, ctStruct, 1+len(w.cols))
	c.beginStruct() // the root group
	c.stringField(4, w.schema.Name)
	c.i32Field(5, int32(len(w.cols))) // num_children
	c.endStruct()
	for _, col := range w.cols {
		col.schemaElement(&c)
	}
	c.i64Field(3, w.rows) // num_rows
	c.listField(4, ctStruct, len(w.groups))
	for _, g := range w.groups {
		w.rowGroup(&c, g)
	}
	if len(w.opts.Metadata) > 0 {
		c.listField(5, ctStruct, len(w.opts.Metadata))
		for _, kv := range w.opts.Metadata {
			c.beginStruct()
			c.stringField(1, kv.Key)
			c.stringField(2, kv.Value)
			c.endStruct()
		}
	}
	if w.opts.CreatedBy != "" {
		c.stringField(6, w.opts.CreatedBy)
	}
	// column_orders: every column's min and max are in the order of its type (signed for
	// integers, unsigned bytes for strings), which a reader needs to know to use them.
	c.listField(7, ctStruct, len(w.cols))
	for range w.cols {
		c.beginStruct()
		c.emptyStructField(1) // TYPE_ORDER
		c.endStruct()
	}
	c.endStruct()
	return c.buf
}

// schemaElement writes the column's SchemaElement, with both its converted type, where the
// type has one, and its logical type, as readers of older and newer versions of the format
// expect.
func (col *column) schemaElement(c *compact) {
	c.beginStruct()
	c.i32Field(1, col.physical())
	rep := int32(repRequired)
	if col.Optional {
		rep = repOptional
	}
	c.i32Field(3, rep)
	c.stringField(4, col.Name)
	switch col.Type {
	case Int64:
		c.i32Field(6, convInt64)
		c.structField(10)    // logicalType
		c.structField(10)    // INTEGER
		c.byteField(1, 64)   // bitWidth
		c.boolField(2, true) // isSigned
		c.endStruct()
		c.endStruct()
	case String:
		c.i32Field(6, convUTF8)
		c.structField(10)
		c.emptyStructField(1) // STRING
		c.endStruct()
	case Timestamp:
		// TIMESTAMP_MILLIS and TIMESTAMP_MICROS are the only converted timestamp types, so a
		// nanosecond timestamp has none.
		c.structField(10)
		c.structField(8)      // TIMESTAMP
		c.boolField(1, true)  // isAdjustedToUTC
		c.structField(2)      // unit
		c.emptyStructField(3) // NANOS
		c.endStruct()
		c.endStruct()
		c.endStruct()
	}
	c.endStruct()
}

// physical returns the column's physical type.
func (col *column) physical() int32 {
	switch col.Type {
	case Double:
		return physDouble
	case Boolean:
		return physBoolean
	case String:
		return physByteArray
	}
	return physInt64
}

// rowGroup writes the RowGroup of g.
func (w *Writer) rowGroup(c *compact, g rowGroup) {
	c.beginStruct()
	c.listField(1, ctStruct, len(g.chunks))
	var size, raw int64
	for i, m := range g.chunks {
		col := w.cols[i]
		size += m.size
		raw += m.raw
		c.beginStruct()               // ColumnChunk
		c.i64Field(2, m.offset)       // file_offset
		c.structField(3)              // meta_data
		c.i32Field(1, col.physical()) // type
		encodings := []int32{encPlain}
		if col.Optional {
			encodings = append(encodings, encRLE)
		}
		c.i32List(2, encodings)
		c.stringList(3, []string{col.Name}) // path_in_schema
		codec := int32(codecUncompressed)
		if w.opts.Codec == Gzip {
			codec = codecGzip
		}
		c.i32Field(4, codec)
		c.i64Field(5, m.values)
		c.i64Field(6, m.raw)    // total_uncompressed_size, page headers included
		c.i64Field(7, m.size)   // total_compressed_size
		c.i64Field(9, m.offset) // data_page_offset
		c.structField(12)       // statistics
		c.i64Field(3, m.nulls)  // null_count
		if m.min != nil {
			c.binaryField(5, m.max) // max_value
			c.binaryField(6, m.min) // min_value
		}
		c.endStruct()
		c.endStruct()
		c.endStruct()
	}
	c.i64Field(2, raw) // total_byte_size: uncompressed
	c.i64Field(3, g.rows)
	if len(g.chunks) > 0 {
		c.i64Field(5, g.chunks[0].offset) // file_offset
	}
	c.i64Field(6, size) // total_compressed_size
	c.endStruct()
}
