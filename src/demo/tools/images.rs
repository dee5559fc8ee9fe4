//! `images`: an image library of metadata records (no pixels): dimensions, format, size,
//! tags, caption and any text an OCR pass would find. Edits change the record the way the real
//! operation would change the image (a crop changes the dimensions, a conversion the format and
//! the estimated size). Generated images get a caption from their prompt.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::super::kit::{
    Args, Kind, Reply, fail, listed, matches_all, next_id, ok, ok_text, tagged,
};
use super::super::world::{DemoWorld, Handler};
use crate::catalog::ToolError;
use crate::sync::lock;

pub(crate) fn handler(name: &str) -> Option<Handler> {
    Some(match name {
        "list_images" => list_images,
        "get_image_info" => get_image_info,
        "generate_image" => generate_image,
        "resize_image" => resize_image,
        "crop_image" => crop_image,
        "rotate_image" => rotate_image,
        "convert_image_format" => convert_image_format,
        "apply_filter" => apply_filter,
        "describe_image" => describe_image,
        "extract_text_from_image" => extract_text_from_image,
        "create_thumbnail" => create_thumbnail,
        "search_images" => search_images,
        "delete_image" => delete_image,
        _ => return None,
    })
}

#[derive(Debug, Clone)]
struct Image {
    id: String,
    name: String,
    width: i64,
    height: i64,
    format: String,
    tags: Vec<String>,
    caption: String,
    text: String,
    filters: Vec<String>,
}

impl Image {
    /// Bytes per pixel by format, a rough but stable estimate.
    fn size(&self) -> i64 {
        let bpp = match self.format.as_str() {
            "png" => 1.6,
            "webp" => 0.35,
            _ => 0.5,
        };
        ((self.width * self.height) as f64 * bpp) as i64
    }

    fn to_json(&self) -> Value {
        json!({"id": self.id, "name": self.name, "width": self.width, "height": self.height, "format": self.format, "size_bytes": self.size(), "tags": self.tags})
    }
}

/// The image library.
#[derive(Debug)]
pub(crate) struct Images {
    images: BTreeMap<String, Image>,
    next_image: u64,
}

impl Images {
    pub(crate) fn seeded() -> Images {
        let mut images = BTreeMap::new();
        for (id, name, w, h, format, tags, caption, text) in [
            (
                "img_601",
                "team-offsite.jpg",
                4032,
                3024,
                "jpeg",
                &["team", "offsite"][..],
                "Eight people smiling on a terrace above a river at sunset",
                "",
            ),
            (
                "img_602",
                "whiteboard.png",
                1920,
                1080,
                "png",
                &["work", "whiteboard"][..],
                "A whiteboard covered in handwritten planning notes",
                "Q2 goals:\n1. Ship search v2\n2. Hire 2 engineers\n3. Launch mobile beta",
            ),
            (
                "img_603",
                "logo-draft.png",
                512,
                512,
                "png",
                &["design"][..],
                "A blue hexagon logo with the letter A",
                "ACME",
            ),
        ] {
            images.insert(
                id.to_string(),
                Image {
                    id: id.to_string(),
                    name: name.to_string(),
                    width: w,
                    height: h,
                    format: format.to_string(),
                    tags: tags.iter().map(|t| t.to_string()).collect(),
                    caption: caption.to_string(),
                    text: text.to_string(),
                    filters: Vec::new(),
                },
            );
        }
        Images {
            images,
            next_image: 604,
        }
    }

    /// Adds an image record (used by `web:capture_screenshot` too) and returns its JSON.
    pub(crate) fn insert(
        &mut self,
        name: &str,
        width: i64,
        height: i64,
        format: &str,
        tags: &[&str],
        caption: &str,
    ) -> Value {
        let id = next_id("img_", &mut self.next_image);
        let image = Image {
            id: id.clone(),
            name: name.to_string(),
            width,
            height,
            format: format.to_string(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            caption: caption.to_string(),
            text: String::new(),
            filters: Vec::new(),
        };
        let details = image.to_json();
        self.images.insert(id, image);
        details
    }

    fn image(&self, id: &str) -> Result<&Image, ToolError> {
        IMAGE.get(&self.images, id)
    }

    fn image_mut(&mut self, id: &str) -> Result<&mut Image, ToolError> {
        IMAGE.get_mut(&mut self.images, id)
    }
}

const IMAGE: Kind = Kind::new("image", "list them with list_images");

fn list_images(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let tag = args.opt_str("tag")?;
    let lib = lock(&world.images);
    let list = lib.images.values().filter(|i| tagged(&i.tags, tag));
    ok(listed("images", list.map(Image::to_json)))
}

fn get_image_info(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let lib = lock(&world.images);
    ok(json!({"image": lib.image(args.str("image_id")?)?.to_json()}))
}

fn generate_image(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let prompt = args.trimmed("prompt")?;
    let (w, h) = match args.str_or("size", "1024x1024")? {
        "512x512" => (512, 512),
        "1024x1024" => (1024, 1024),
        "1792x1024" => (1792, 1024),
        other => {
            return Err(fail(format!(
                "size must be 512x512, 1024x1024 or 1792x1024, got {other:?}"
            )));
        }
    };
    let style = args.str_or("style", "natural")?;
    let slug: String = prompt
        .to_lowercase()
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { '-' })
        .collect();
    let slug: String = slug
        .split('-')
        .filter(|p| !p.is_empty())
        .take(5)
        .collect::<Vec<_>>()
        .join("-");
    let mut lib = lock(&world.images);
    let image = lib.insert(
        &format!("{slug}.png"),
        w,
        h,
        "png",
        &["generated", style],
        &format!("Generated: {prompt}"),
    );
    ok(json!({"image": image, "prompt": prompt}))
}

fn resize_image(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let width = args.i64("width")?.clamp(1, 10_000);
    let height = args.opt_i64("height")?;
    let mut lib = lock(&world.images);
    let img = lib.image_mut(args.str("image_id")?)?;
    let height = match height {
        Some(h) => h.clamp(1, 10_000),
        None => ((img.height as f64) * (width as f64) / (img.width as f64))
            .round()
            .max(1.0) as i64,
    };
    img.width = width;
    img.height = height;
    ok(json!({"image": img.to_json()}))
}

fn crop_image(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let (x, y, w, h) = (
        args.i64("x")?,
        args.i64("y")?,
        args.i64("width")?,
        args.i64("height")?,
    );
    if x < 0 || y < 0 || w < 1 || h < 1 {
        return Err(fail("x and y must be >= 0, width and height >= 1"));
    }
    let mut lib = lock(&world.images);
    let img = lib.image_mut(args.str("image_id")?)?;
    if x + w > img.width || y + h > img.height {
        return Err(fail(format!(
            "the crop rectangle falls outside the {}x{} image",
            img.width, img.height
        )));
    }
    img.width = w;
    img.height = h;
    ok(json!({"image": img.to_json()}))
}

fn rotate_image(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let degrees = args.i64("degrees")?;
    if ![90, 180, 270].contains(&degrees) {
        return Err(fail("degrees must be 90, 180 or 270"));
    }
    let mut lib = lock(&world.images);
    let img = lib.image_mut(args.str("image_id")?)?;
    if degrees != 180 {
        std::mem::swap(&mut img.width, &mut img.height);
    }
    ok(json!({"image": img.to_json()}))
}

fn convert_image_format(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let format = args.str("format")?;
    if !["png", "jpeg", "webp"].contains(&format) {
        return Err(fail("format must be png, jpeg or webp"));
    }
    let mut lib = lock(&world.images);
    let img = lib.image_mut(args.str("image_id")?)?;
    if img.format == format {
        return Err(fail(format!("{} is already {format}", img.id)));
    }
    let before = img.size();
    img.format = format.to_string();
    let stem = img
        .name
        .rsplit_once('.')
        .map_or(img.name.clone(), |(s, _)| s.to_string());
    img.name = format!("{stem}.{}", if format == "jpeg" { "jpg" } else { format });
    ok(json!({"image": img.to_json(), "previous_size_bytes": before}))
}

fn apply_filter(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let filter = args.str("filter")?;
    if !["grayscale", "sepia", "blur", "sharpen"].contains(&filter) {
        return Err(fail("filter must be grayscale, sepia, blur or sharpen"));
    }
    let mut lib = lock(&world.images);
    let img = lib.image_mut(args.str("image_id")?)?;
    img.filters.push(filter.to_string());
    ok(json!({"image": img.to_json(), "filters_applied": img.filters}))
}

fn describe_image(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let lib = lock(&world.images);
    let img = lib.image(args.str("image_id")?)?;
    let orientation = if img.width > img.height {
        "landscape"
    } else if img.width < img.height {
        "portrait"
    } else {
        "square"
    };
    let mut caption = img.caption.clone();
    if !img.filters.is_empty() {
        caption.push_str(&format!(" (with {} applied)", img.filters.join(", ")));
    }
    ok_text(
        json!({"image_id": img.id, "caption": caption, "orientation": orientation, "has_text": !img.text.is_empty()}),
        caption.clone(),
    )
}

fn extract_text_from_image(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let lib = lock(&world.images);
    let img = lib.image(args.str("image_id")?)?;
    let lines: Vec<&str> = img.text.lines().collect();
    ok(
        json!({"image_id": img.id, "text": img.text, "lines": lines.len(), "confidence": if img.text.is_empty() { 0.0 } else { 0.94 }}),
    )
}

fn create_thumbnail(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let max_side = args.i64_or("max_side", 256)?.clamp(16, 512);
    let mut lib = lock(&world.images);
    let source = lib.image(args.str("image_id")?)?.clone();
    let scale = max_side as f64 / source.width.max(source.height) as f64;
    let (w, h) = if scale >= 1.0 {
        (source.width, source.height)
    } else {
        (
            ((source.width as f64) * scale).round().max(1.0) as i64,
            ((source.height as f64) * scale).round().max(1.0) as i64,
        )
    };
    let stem = source
        .name
        .rsplit_once('.')
        .map_or(source.name.clone(), |(s, _)| s.to_string());
    let thumb = lib.insert(
        &format!("{stem}-thumb.jpg"),
        w,
        h,
        "jpeg",
        &["thumbnail"],
        &format!("Thumbnail of {}", source.name),
    );
    ok(json!({"thumbnail": thumb, "source_id": source.id}))
}

fn search_images(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let query = args.str("query")?;
    let lib = lock(&world.images);
    let list = lib.images.values().filter(|i| {
        matches_all(
            &format!("{} {} {} {}", i.name, i.tags.join(" "), i.caption, i.text),
            query,
        )
    });
    ok(listed("images", list.map(Image::to_json)))
}

fn delete_image(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let mut lib = lock(&world.images);
    let img = IMAGE.take(&mut lib.images, args.str("image_id")?)?;
    ok(
        json!({"deleted": {"id": img.id, "name": img.name}, "freed_bytes": img.size(), "images_left": lib.images.len()}),
    )
}
