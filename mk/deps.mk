# dsview - the Debian packages the build, the tests and the demo need, and
# the target that installs those missing (included by the Makefile).
#   python3-*: the e2e tests write their fixtures with the libraries people
#   write their files with (numpy, h5py, hdf5plugin, zarr, torch, ...);
#   hdf5-filter-plugin*: the HDF5 library's own filters for the fallback tests;
#   fio, strace, man-db: tests of the mount with other readers, of its system
#   calls, and of the man page; clang-format: `make format-check` (.ci/run);
#   python3-setuptools: the build backend of `pip install ./python`;
#   python3-venv: the project-local venv of the writers Debian lacks (mk/venv.mk);
#   python3-nibabel: the NIfTI tests' images and references (test_nifti.py);
#   python3-scipy: the EEGLAB tests' .set files, written and read back by
#   scipy.io's savemat and loadmat (test_eeglab.py, the fuzz seeds);
#   libcurl4-openssl-dev: the object-storage client (src/net); libexpat1-dev:
#   its bucket listings' XML (src/net/list.c); python3-boto3:
#   the object-storage tests make buckets and upload fixtures with it;
#   libssl-dev, libdeflate-dev: the disk cache's SHA-256 names of objects
#   and CRC-32 checks of its entries; libdeflate also inflates HDF5 gzip
#   chunks on the fast path (src/codec/deflate.c);
#   squashfuse, squashfs-tools: the squashfuse_ll peer of bench-store;
#   python3-mne: the EEG tests' second reference reader (EDF/BDF, BrainVision,
#   EEGLAB) and bench-eeg's peer, as EEG users read their recordings.
#   python3-mypy: the Python package's type hints checked as users' checkers
#   read them (test_typing.py).
#   python3-matplotlib: `python3 -m bench report`'s PNG plots.
DEB_PKGS := libfuse3-dev fuse3 libhdf5-dev liblz4-dev libzstd-dev libblosc-dev libcmocka-dev libinih-dev \
            libjansson-dev pkg-config python3-numpy python3-h5py python3-hdf5plugin python3-zstandard \
            hdf5-filter-plugin hdf5-filter-plugin-blosc-serial zlib1g-dev fio strace python3-torch \
            python3-zarr man-db python3-skimage python3-lz4 python3-blosc clang-format \
            python3-setuptools python3-venv python3-nibabel libcurl4-openssl-dev libexpat1-dev \
            python3-boto3 squashfuse squashfs-tools libssl-dev libdeflate-dev \
            iproute2 s3fs python3-scipy python3-mne python3-mypy python3-matplotlib

# Installs only what is missing; apt-get update first, as a fresh machine needs.
deps:
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "dsview: installing$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends $$missing; \
	fi
