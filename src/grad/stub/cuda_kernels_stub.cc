// The CUDA gradient kernels in a build without CUDA: Unavailable.
#include "grad/device_kernels.h"
#include "hycc/error.h"

namespace hycc::grad {

std::unique_ptr<DeviceKernels> make_cuda_kernels(device::DeviceOps&, DeviceStream) {
  throw Unavailable(tagged("coll:device", "CUDA backend: hycc was built without CUDA (nvcc not ",
                           "found or -DHYCC_WITH_CUDA=OFF)"));
}

}  // namespace hycc::grad
