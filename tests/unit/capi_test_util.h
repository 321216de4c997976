// What the C API tests share: a codec handle destroyed at the end of its scope.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "hycc/hycc.h"

namespace hycc::test {

struct CodecHandle {
  explicit CodecHandle(const std::string& spec) {
    EXPECT_EQ(hycc_codec_create(spec.c_str(), &codec), HYCC_OK)
        << spec << ": " << hycc_last_error();
  }
  ~CodecHandle() { hycc_codec_destroy(codec); }
  CodecHandle(const CodecHandle&) = delete;
  CodecHandle& operator=(const CodecHandle&) = delete;
  hycc_codec* codec = nullptr;
};

}  // namespace hycc::test
