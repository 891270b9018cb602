// DLPack: tensors from another library become buffers without a copy and go back the same way;
// every way a tensor can be unsuitable is an error saying which.
#include <doctest/doctest.h>

#include <support/devices.hpp>
#include <tritium/dlpack.hpp>

#include <string>
#include <vector>

namespace tl = tritium::tl;
using tritium::Error;

namespace {

void double_it(tl::ptr<float> x, tl::i32 n, tl::constexpr_<int> BLOCK) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  tl::store(x + offs, 2.f * tl::load(x + offs, offs < n), offs < n);
}

// A host tensor as another library would export it; `deleted` counts deleter calls.
struct Exported {
  std::vector<float> data;
  std::vector<int64_t> shape, strides;
  int deleted = 0;
  DLManagedTensor* make(DLDataType dtype = tritium::dlpack_dtype<float>(),
                        DLDevice device = {kDLCPU, 0}, uint64_t byte_offset = 0) {
    auto* m = new DLManagedTensor{};
    m->dl_tensor.data = data.data();
    m->dl_tensor.device = device;
    m->dl_tensor.ndim = static_cast<int32_t>(shape.size());
    m->dl_tensor.dtype = dtype;
    m->dl_tensor.shape = shape.data();
    m->dl_tensor.strides = strides.empty() ? nullptr : strides.data();
    m->dl_tensor.byte_offset = byte_offset;
    m->manager_ctx = this;
    m->deleter = [](DLManagedTensor* self) {
      ++static_cast<Exported*>(self->manager_ctx)->deleted;
      delete self;
    };
    return m;
  }
};

TEST_CASE("dlpack: a host tensor is used in place on every host device, and released once") {
  auto k = tritium::jit(double_it, "double_it");
  for (auto dev : tritium::testing::test_devices()) {
    if (!dev.backend().host_memory())
      continue;
    CAPTURE(dev.str());
    Exported e{std::vector<float>(600, 1.5f), {3, 200}, {200, 1}};
    {
      auto x = tritium::from_dlpack<float>(e.make(), dev);
      CHECK(x.size() == 600);
      CHECK(x.data() == e.data.data()); // no copy
      CHECK(x.adopted());
      k[{3}](x, 600, 256);
      dev.synchronize();
      CHECK(e.deleted == 0);
    }
    CHECK(e.deleted == 1);
    CHECK(e.data[0] == 3.f);
    CHECK(e.data[599] == 3.f);
  }
}

TEST_CASE("dlpack: byte offsets, size-1 dimensions and 0-d tensors") {
  Exported e{std::vector<float>(10, 7.f), {1, 4, 1}, {99, 1, 5}};
  auto x = tritium::from_dlpack<float>(e.make(tritium::dlpack_dtype<float>(), {kDLCPU, 0}, 8));
  CHECK(x.data() == e.data.data() + 2);
  CHECK(x.size() == 4);
  Exported s{std::vector<float>(1, 2.f), {}, {}};
  CHECK(tritium::from_dlpack<float>(s.make()).size() == 1);
}

TEST_CASE("dlpack: a buffer goes out as a tensor and comes back, owned all along") {
  for (auto dev : tritium::testing::test_devices()) {
    CAPTURE(dev.str());
    auto b = dev.from_host(std::vector<int32_t>{1, 2, 3, 4, 5, 6});
    int32_t* where = b.data();
    DLManagedTensor* t = tritium::to_dlpack(std::move(b), {2, 3});
    CHECK(b.size() == 0); // moved into the tensor
    CHECK(t->dl_tensor.data == where);
    CHECK(t->dl_tensor.ndim == 2);
    CHECK(t->dl_tensor.shape[1] == 3);
    CHECK(t->dl_tensor.dtype.code == kDLInt);
    CHECK(t->dl_tensor.dtype.bits == 32);
    auto back = tritium::from_dlpack<int32_t>(t, dev);
    CHECK(back.data() == where);
    CHECK(back.to_host() == std::vector<int32_t>{1, 2, 3, 4, 5, 6});
  }
  // Unclaimed, the consumer's deleter releases the buffer (the interpreter frees its memory).
  auto dev = tritium::device("interpreter");
  DLManagedTensor* t = tritium::to_dlpack(dev.alloc<float>(4));
  t->deleter(t);
}

TEST_CASE("dlpack: unsuitable tensors are errors, and the tensor is still released") {
  Exported e{std::vector<float>(12, 0.f), {3, 4}, {}};
  auto expect = [&](DLManagedTensor* t, const char* message, auto type) {
    using T = decltype(type);
    int before = e.deleted;
    CHECK_THROWS_WITH_AS(tritium::from_dlpack<T>(t), doctest::Contains(message), Error);
    CHECK(e.deleted == before + 1);
  };
  expect(e.make(), "holds float32, not the buffer's int32", int32_t{});
  expect(e.make(DLDataType{kDLFloat, 32, 4}), "holds float32x4", float{});
  expect(e.make(tritium::dlpack_dtype<float>(), {kDLVulkan, 0}),
         "tensors on device type 7 are "
         "not supported",
         float{});
  expect(e.make(tritium::dlpack_dtype<float>(), {kDLCPU, 0}, 2), "not aligned", float{});
  e.strides = {1, 3}; // column-major
  expect(e.make(), "not contiguous (dimension 1 has stride 3", float{});
  e.strides = {};
  e.shape = {3, -4};
  expect(e.make(), "dimension 1 has negative size -4", float{});
  e.shape = {3, 4};
  CHECK_THROWS_WITH_AS(tritium::from_dlpack<float>(nullptr), doctest::Contains("null"), Error);
  // A host tensor on a device whose memory is not the host's.
  for (auto dev : tritium::testing::test_devices())
    if (!dev.backend().host_memory()) {
      int before = e.deleted;
      CHECK_THROWS_WITH_AS(tritium::from_dlpack<float>(e.make(), dev),
                           doctest::Contains("the tensor is on kDLCPU 0, not on device"), Error);
      CHECK(e.deleted == before + 1);
    }
  // Shapes that do not hold the buffer.
  auto cpu = tritium::device("cpu");
  CHECK_THROWS_WITH_AS(tritium::to_dlpack(cpu.alloc<float>(6), {4, 2}),
                       doctest::Contains("a shape of 8 elements for a buffer of 6"), Error);
  // bool: kDLUInt 8 (DLPack 0.6) and kDLBool (0.8) are both accepted.
  Exported flags{std::vector<float>(1), {2}, {}};
  CHECK(tritium::from_dlpack<bool>(flags.make(DLDataType{kDLUInt, 8, 1})).size() == 2);
  CHECK(tritium::from_dlpack<bool>(flags.make(DLDataType{6, 8, 1})).size() == 2);
}

} // namespace
