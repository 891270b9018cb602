// Block pointers (Triton's tl.make_block_ptr / tl.advance) and tensor descriptors
// (tl.make_tensor_descriptor), written in the DSL: a load through them is a block of pointers
// computed from the offsets, strides and an arange per dimension, masked by the bounds that
// boundary_check names. Every backend runs them as ordinary loads and stores; a backend that
// wants TMA or buffer loads can recognise the pattern later.
#pragma once

#include <tritium/lang/ops.hpp>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

namespace tritium::lang {

// A pointer to a block_shape block inside a tensor of `shape` with `strides` (in elements),
// at `offsets`. `order` (Triton's memory-order hint) is kept but does not change results.
template <Element E>
struct block_ptr {
  basic_tensor<pointer<E>> base;
  std::vector<i64> shape, strides;
  std::vector<i32> offsets;
  Shape block_shape, order;

  // Assignment must assign each handle: a moved-in vector would replace the handles a
  // tl::range loop tracks with new ones, and `bp = tl::advance(bp, ...)` would not be carried.
  // (Declaring the copy assignment leaves no move assignment: rvalues are copied too.)
  block_ptr& operator=(const block_ptr&) = default;
};

struct BlockOptions {
  std::vector<int> boundary_check; // dimensions whose bounds are checked (masked)
  std::string padding_option;      // "" or "zero": 0 out of bounds; "nan": NaN (floats only)
  std::string cache_modifier;
  std::string eviction_policy;
};

namespace detail {

inline std::vector<i64> to_i64(const std::vector<IntArg>& xs, const Loc& loc) {
  std::vector<i64> out;
  for (const IntArg& x : xs)
    out.emplace_back(cast(x.v, dtype_of<int64_t>(), loc));
  return out;
}

// The block's pointers and, for the dimensions in `check`, the in-bounds mask (null if none).
template <Element E>
std::pair<ir::Value*, ir::Value*> block_pointers(const block_ptr<E>& bp,
                                                 const std::vector<int>& check, const Loc& loc) {
  int rank = static_cast<int>(bp.block_shape.size());
  ir::Value* ptrs = bp.base.use(loc);
  ir::Value* mask = nullptr;
  for (int c : check)
    if (c < 0 || c >= rank)
      fail(loc, "boundary_check names dimension " + std::to_string(c) + " of a rank-" +
                    std::to_string(rank) + " block");
  for (int d = 0; d < rank; ++d) {
    // idx_d = offset_d + arange(0, block_shape[d]), shaped to broadcast along dimension d.
    ir::Value* idx = arith(ir::OpKind::Add, bp.offsets[d].use(loc),
                           arange(0, bp.block_shape[d], loc), dtype_of<int32_t>(), loc);
    // expand_dims, not a reshape: the GPU passes recompute it in any layout for free, where a
    // reshape's result would go through shared memory to meet the load's layout.
    for (int k = 0; k < rank; ++k)
      if (k != d)
        idx = expand_dims(idx, k, loc);
    ir::Value* off = arith(ir::OpKind::Mul, cast(idx, dtype_of<int64_t>(), loc),
                           bp.strides[d].use(loc), dtype_of<int64_t>(), loc);
    ptrs = add_ptr(ptrs, off, loc);
    if (std::find(check.begin(), check.end(), d) != check.end()) {
      ir::Value* i64idx = cast(idx, dtype_of<int64_t>(), loc);
      ir::Value* zero = constant_int(0, dtype_of<int64_t>(), {}, loc);
      ir::Value* in =
          arith(ir::OpKind::And, compare(ir::CmpPred::Ge, i64idx, zero, dtype_of<int64_t>(), loc),
                compare(ir::CmpPred::Lt, i64idx, bp.shape[d].use(loc), dtype_of<int64_t>(), loc),
                dtype_of<bool>(), loc);
      mask = mask ? arith(ir::OpKind::And, mask, in, dtype_of<bool>(), loc) : in;
    }
  }
  // A block of rank 0 is not a block; every dimension gets its arange above.
  ptrs = broadcast_to(ptrs, bp.block_shape, loc);
  if (mask)
    mask = broadcast_to(mask, bp.block_shape, loc);
  return {ptrs, mask};
}

inline LoadOptions memory_options(const BlockOptions& o) {
  return {o.cache_modifier, o.eviction_policy, false};
}

} // namespace detail

template <Element E>
block_ptr<E> make_block_ptr(const basic_tensor<pointer<E>>& base, std::vector<IntArg> shape,
                            std::vector<IntArg> strides, std::vector<IntArg> offsets,
                            Shape block_shape, Shape order = {}, Loc loc = Loc::current()) {
  size_t r = block_shape.size();
  if (r == 0 || shape.size() != r || strides.size() != r || offsets.size() != r ||
      (!order.empty() && order.size() != r))
    detail::fail(loc, "make_block_ptr: shape, strides, offsets, block_shape (and order) must "
                      "all have the block's rank (1 or more)");
  for (int64_t b : block_shape)
    if (b <= 0 || (b & (b - 1)) != 0)
      detail::fail(loc, "make_block_ptr: block_shape " + ir::shape_string(block_shape) +
                            " must have power-of-two dimensions");
  block_ptr<E> bp{base, detail::to_i64(shape, loc), detail::to_i64(strides, loc), {}, block_shape,
                  order};
  for (const IntArg& o : offsets)
    bp.offsets.emplace_back(detail::cast(o.v, dtype_of<int32_t>(), loc));
  return bp;
}

// The same block pointer moved by `deltas` (elements per dimension).
template <Element E>
block_ptr<E> advance(const block_ptr<E>& bp, std::vector<IntArg> deltas, Loc loc = Loc::current()) {
  if (deltas.size() != bp.offsets.size())
    detail::fail(loc, "advance: " + std::to_string(deltas.size()) +
                          " offsets for a block of rank " + std::to_string(bp.offsets.size()));
  block_ptr<E> out = bp;
  for (size_t d = 0; d < deltas.size(); ++d)
    out.offsets[d] = i32(detail::arith(ir::OpKind::Add, bp.offsets[d].use(loc),
                                       detail::cast(deltas[d].v, dtype_of<int32_t>(), loc),
                                       dtype_of<int32_t>(), loc));
  return out;
}

// Loads the block; dimensions in boundary_check read `padding_option` out of bounds.
template <Element E>
basic_tensor<E> load(const block_ptr<E>& bp, BlockOptions opts = {}, Loc loc = Loc::current()) {
  auto [ptrs, mask] = detail::block_pointers(bp, opts.boundary_check, loc);
  ir::Value* other = nullptr;
  if (opts.padding_option == "nan") {
    if (!dtype_traits<E>::is_float)
      detail::fail(loc, "padding_option \"nan\" needs floating-point elements");
    other =
        detail::constant_float(std::numeric_limits<double>::quiet_NaN(), dtype_of<E>(), {}, loc);
  } else if (!opts.padding_option.empty() && opts.padding_option != "zero") {
    detail::fail(loc, "unknown padding_option '" + opts.padding_option + "' (zero or nan)");
  }
  return basic_tensor<E>(
      detail::load(ptrs, mask, mask ? other : nullptr, detail::memory_options(opts), loc));
}

// Stores the block; dimensions in boundary_check are not written out of bounds.
template <Element E, class V>
void store(const block_ptr<E>& bp, const V& value, BlockOptions opts = {},
           Loc loc = Loc::current()) {
  auto [ptrs, mask] = detail::block_pointers(bp, opts.boundary_check, loc);
  ir::Value* v = detail::operand_value<E>(value, loc);
  detail::store(ptrs, detail::cast(v, dtype_of<E>(), loc), mask, detail::memory_options(opts), loc);
}

// Triton's tensor descriptors: a tensor's base, shape and strides, and the block shape that
// desc.load(offsets) / desc.store(offsets, value) move; out-of-bounds parts read zero and are
// not written.
template <Element E>
struct tensor_descriptor {
  basic_tensor<pointer<E>> base;
  std::vector<i64> shape, strides;
  Shape block_shape;

  tensor_descriptor& operator=(const tensor_descriptor&) = default; // see block_ptr

  basic_tensor<E> load(std::vector<IntArg> offsets, Loc loc = Loc::current()) const {
    block_ptr<E> bp = at(offsets, loc);
    basic_tensor<E> block = lang::load(bp, {.boundary_check = all_dims()}, loc);
    std::vector<ir::Value*> sh, st, of;
    for (size_t d = 0; d < block_shape.size(); ++d) {
      sh.push_back(shape[d].use(loc));
      st.push_back(strides[d].use(loc));
      of.push_back(bp.offsets[d].use(loc));
    }
    detail::describe_load(block.use(loc), base.use(loc), sh, st, of, loc);
    return block;
  }
  template <class V>
  void store(std::vector<IntArg> offsets, const V& value, Loc loc = Loc::current()) const {
    lang::store(at(offsets, loc), value, {.boundary_check = all_dims()}, loc);
  }

private:
  std::vector<int> all_dims() const {
    std::vector<int> d;
    for (size_t i = 0; i < block_shape.size(); ++i)
      d.push_back(static_cast<int>(i));
    return d;
  }
  block_ptr<E> at(const std::vector<IntArg>& offsets, const Loc& loc) const {
    if (offsets.size() != block_shape.size())
      detail::fail(loc, "a tensor descriptor of rank " + std::to_string(block_shape.size()) +
                            " takes " + std::to_string(block_shape.size()) + " offsets");
    block_ptr<E> bp{base, shape, strides, {}, block_shape, {}};
    for (const IntArg& o : offsets)
      bp.offsets.emplace_back(detail::cast(o.v, dtype_of<int32_t>(), loc));
    return bp;
  }
};

template <Element E>
tensor_descriptor<E> make_tensor_descriptor(const basic_tensor<pointer<E>>& base,
                                            std::vector<IntArg> shape, std::vector<IntArg> strides,
                                            Shape block_shape, Loc loc = Loc::current()) {
  size_t r = block_shape.size();
  if (r == 0 || shape.size() != r || strides.size() != r)
    detail::fail(loc, "make_tensor_descriptor: shape, strides and block_shape must all have the "
                      "block's rank (1 or more)");
  for (int64_t b : block_shape)
    if (b <= 0 || (b & (b - 1)) != 0)
      detail::fail(loc, "make_tensor_descriptor: block_shape " + ir::shape_string(block_shape) +
                            " must have power-of-two dimensions");
  return {base, detail::to_i64(shape, loc), detail::to_i64(strides, loc), block_shape};
}

// Triton's free functions for descriptors.
template <Element E>
basic_tensor<E> load_tensor_descriptor(const tensor_descriptor<E>& desc,
                                       std::vector<IntArg> offsets, Loc loc = Loc::current()) {
  return desc.load(std::move(offsets), loc);
}
template <Element E, class V>
void store_tensor_descriptor(const tensor_descriptor<E>& desc, std::vector<IntArg> offsets,
                             const V& value, Loc loc = Loc::current()) {
  desc.store(std::move(offsets), value, loc);
}

} // namespace tritium::lang
