// The device API (hycc/device.h, hycc/codec_device.h) in a build without CUDA: queries answer
// "none", the rest throws Unavailable.
#include <utility>

#include "hycc/codec_device.h"
#include "hycc/error.h"

namespace hycc {
namespace {

[[noreturn]] void unavailable() {
  throw Unavailable(tagged("codec:device", "hycc was built without CUDA (nvcc not found or ",
                           "-DHYCC_WITH_CUDA=OFF)"));
}

}  // namespace

bool device_codecs_built() { return false; }
int device_count() { return 0; }
std::string device_unavailable_reason() { return "hycc was built without CUDA"; }
std::string device_description() { unavailable(); }

DeviceBuffer::DeviceBuffer(size_t) { unavailable(); }
DeviceBuffer::~DeviceBuffer() = default;
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  std::swap(data_, o.data_);
  std::swap(bytes_, o.bytes_);
  return *this;
}
void copy_to_device(void*, const void*, size_t) { unavailable(); }
void copy_to_host(void*, const void*, size_t) { unavailable(); }
void copy_on_device(void*, const void*, size_t, DeviceStream) { unavailable(); }
void synchronize_device() { unavailable(); }
void synchronize_stream(DeviceStream) { unavailable(); }
OwnedDeviceStream::OwnedDeviceStream() { unavailable(); }
OwnedDeviceStream::~OwnedDeviceStream() = default;
DeviceEvent::DeviceEvent() { unavailable(); }
DeviceEvent::~DeviceEvent() = default;
void DeviceEvent::record(DeviceStream) { unavailable(); }
void DeviceEvent::wait(DeviceStream) const { unavailable(); }
bool device_runs_kernels() { return false; }
void fill_device(void*, int, size_t) { unavailable(); }

bool device_supports(const CodecConfig&) { return false; }

size_t encode_device(const CodecConfig&, ConstTensorView, void*, size_t, const CompressOptions&,
                     DeviceStream) {
  unavailable();
}

void decode_device(const CodecConfig&, const void*, size_t, TensorView, DeviceStream) {
  unavailable();
}

void detail::decode_device_deferred(const CodecConfig&, const void*, size_t, TensorView,
                                    DeviceStream, uint32_t*) {
  unavailable();
}

}  // namespace hycc
