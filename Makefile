# placer: the two commands a new user runs (as root on Debian 12).
#   make demo   install what is missing, build, run the main job on an embedded default
#   make test   install what is missing, build, run every test with CTest
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure build demo test bench clean gpu-bundle format pretrained

all: build

deps:
	@bash scripts/install-deps.sh

# LibTorch comes from the project environment (.venv, made by deps) or TORCH_PYTHON.
# Keyed on the generated Makefile, which a failed configure does not write (CMakeCache.txt it does: after
# one failure, installing what was missing and running make again skipped configure for good); after deps,
# also under make -j.
$(BUILD)/Makefile: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

configure: $(BUILD)/Makefile

build: deps configure
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	bash scripts/demo.sh $(BUILD)

test: build
	cd $(BUILD) && ctest --output-on-failure -LE gpu -j $(JOBS) --timeout 900

# Remake the pretrained gnn policy in policies/pretrained/ (configs/pretrain_gnn.yaml; ~4 min on 2 cores).
pretrained: build
	bash scripts/pretrain.sh $(BUILD) policies/pretrained

# What a bare GPU machine needs (Debian .debs, a pyzmq wheel) for scripts/gpu-check.sh: docs/gpu.md.
gpu-bundle: deps
	bash scripts/gpu-bundle.sh gpu-bundle

# Apply .clang-format to every tracked C++ and CUDA file.
format:
	@command -v clang-format >/dev/null || apt-get install -y -q clang-format
	git ls-files '*.cc' '*.h' '*.cu' '*.cuh' | xargs clang-format -i

clean:
	rm -rf $(BUILD)
