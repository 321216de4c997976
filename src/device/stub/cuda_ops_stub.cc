// The CUDA device operations in a build without CUDA: Unavailable.
#include "device/device_ops.h"
#include "hycc/error.h"

namespace hycc::device {

std::unique_ptr<DeviceOps> make_cuda_ops(DeviceStream) {
  throw Unavailable(tagged("coll:device", "CUDA backend: hycc was built without CUDA (nvcc not ",
                           "found or -DHYCC_WITH_CUDA=OFF)"));
}

}  // namespace hycc::device
