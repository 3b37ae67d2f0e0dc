/*
 * Stand-in for the audio decoding header that llama.cpp's multimodal helper
 * (tools/mtmd/mtmd-helper.cpp) includes. Go module zips of ollama leave out
 * llama.cpp's vendor/ directory, so the real header is not available when the
 * module is built with `go install`. The runner never sends audio, so this
 * header declares only the handful of names that helper uses, and every
 * function reports failure: an audio input is rejected as "not decodable".
 *
 * Written for the runner project; it shares no code with the real library.
 */
#ifndef RUNNER_MINIAUDIO_STANDIN_H
#define RUNNER_MINIAUDIO_STANDIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint32_t ma_uint32;
typedef uint64_t ma_uint64;

typedef int ma_result;
#define MA_SUCCESS 0
#define MA_ERROR (-1)
#define MA_NOT_IMPLEMENTED (-29)

typedef enum {
    ma_format_unknown = 0,
    ma_format_u8 = 1,
    ma_format_s16 = 2,
    ma_format_s24 = 3,
    ma_format_s32 = 4,
    ma_format_f32 = 5
} ma_format;

typedef enum {
    ma_encoding_format_unknown = 0,
    ma_encoding_format_wav
} ma_encoding_format;

typedef struct {
    ma_format format;
    ma_uint32 channels;
    ma_uint32 sampleRate;
} ma_decoder_config;

typedef struct {
    ma_decoder_config config;
} ma_decoder;

typedef struct {
    ma_encoding_format encodingFormat;
    ma_format format;
    ma_uint32 channels;
    ma_uint32 sampleRate;
} ma_encoder_config;

typedef struct {
    ma_encoder_config config;
} ma_encoder;

static inline ma_decoder_config ma_decoder_config_init(ma_format format, ma_uint32 channels, ma_uint32 sampleRate) {
    ma_decoder_config c;
    c.format = format;
    c.channels = channels;
    c.sampleRate = sampleRate;
    return c;
}

static inline ma_result ma_decoder_init_memory(const void *data, size_t size, const ma_decoder_config *config, ma_decoder *decoder) {
    (void)data;
    (void)size;
    (void)config;
    (void)decoder;
    return MA_NOT_IMPLEMENTED;
}

static inline ma_result ma_decoder_get_length_in_pcm_frames(ma_decoder *decoder, ma_uint64 *length) {
    (void)decoder;
    if (length != NULL) {
        *length = 0;
    }
    return MA_NOT_IMPLEMENTED;
}

static inline ma_result ma_decoder_read_pcm_frames(ma_decoder *decoder, void *frames, ma_uint64 count, ma_uint64 *read) {
    (void)decoder;
    (void)frames;
    (void)count;
    if (read != NULL) {
        *read = 0;
    }
    return MA_NOT_IMPLEMENTED;
}

static inline ma_result ma_decoder_uninit(ma_decoder *decoder) {
    (void)decoder;
    return MA_NOT_IMPLEMENTED;
}

static inline ma_encoder_config ma_encoder_config_init(ma_encoding_format encodingFormat, ma_format format, ma_uint32 channels, ma_uint32 sampleRate) {
    ma_encoder_config c;
    c.encodingFormat = encodingFormat;
    c.format = format;
    c.channels = channels;
    c.sampleRate = sampleRate;
    return c;
}

static inline ma_result ma_encoder_init_file(const char *path, const ma_encoder_config *config, ma_encoder *encoder) {
    (void)path;
    (void)config;
    (void)encoder;
    return MA_NOT_IMPLEMENTED;
}

static inline ma_result ma_encoder_write_pcm_frames(ma_encoder *encoder, const void *frames, ma_uint64 count, ma_uint64 *written) {
    (void)encoder;
    (void)frames;
    (void)count;
    if (written != NULL) {
        *written = 0;
    }
    return MA_NOT_IMPLEMENTED;
}

static inline void ma_encoder_uninit(ma_encoder *encoder) {
    (void)encoder;
}

#ifdef __cplusplus
}
#endif

#endif /* RUNNER_MINIAUDIO_STANDIN_H */
